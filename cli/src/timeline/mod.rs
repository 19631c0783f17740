//! `leasehold replay --timeline FILE.html`: one self-contained HTML page
//! (inline SVG and CSS, no scripts or external assets) showing a run in
//! true time.
//!
//! - a lane per host: its faults drawn on it (hatched grey: a crash, a
//!   pause, a partition or a hold touching that host), its wall clock's
//!   offset from true time with a labelled scale, and its worker colour;
//! - a lane per job: who held which token when (one colour per worker,
//!   from a palette that has no grey and no red), how long the holder
//!   believed it (dashed strip), and violations marked on the job's lane
//!   with a numbered red marker;
//! - arrows for held and late messages, from the sender's lane at the send
//!   to the receiver's lane at the delivery;
//! - a legend, and the numbered violations listed under the drawing.
//!
//! Labels never overprint: a label is drawn only where it fits (the layout
//! in `draw` keeps each row's occupied spans), and whatever did not fit
//! is in the element's tooltip and in the list.
//!
//! The page is drawn from a [`Timeline`], plain data that the replay
//! command builds from a history.

mod build;
mod draw;
mod escape;
mod page;
mod palette;
mod render;

pub use build::{from_history, MarkAt, LATE_MS};
pub use draw::text_width;
pub use escape::escape;
pub use page::{Arrow, ClockLane, FaultSpan, JobLane, LeaseBar, Mark, Timeline, MAX_LANES};
pub use palette::Palette;
pub use render::render;
