//! [`forward_store!`]: `impl Store` for a wrapper, forwarding to the store
//! it wraps, so a wrapper writes only the methods it changes.

/// Implements [`Store`](crate::Store) for a wrapper by forwarding each
/// method to the store it wraps: `|self| target` names that store (any
/// expression of `self` whose type implements `Store`: `self.inner`,
/// `**self`).
///
/// The "all but these" form, `except [names] { methods }`, forwards every
/// method except those named; each one named is either written in the
/// block or left to the trait's default (as `batch`, `batch_within` and
/// `work_available` have one). Naming a method and leaving it out is how a
/// wrapper keeps a default on purpose, so say why next to the list. A
/// wrapper that changes `get` names `get_many` too (left to the default,
/// it reads through the changed `get`).
///
/// ```
/// use leasehold_core::{forward_store, ClaimRequest, Lease, Store, StoreError};
///
/// /// Counts claims, forwards everything.
/// struct Counted<S> {
///     inner: S,
///     claims: std::sync::atomic::AtomicU64,
/// }
///
/// forward_store! {
///     impl[S: Store] Store for Counted<S>, |self| self.inner;
///     except [claim] {
///         async fn claim(&self, req: ClaimRequest) -> Result<Vec<Lease>, StoreError> {
///             self.claims.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
///             self.inner.claim(req).await
///         }
///     }
/// }
///
/// /// Forwards everything.
/// struct Plain<S>(S);
/// forward_store!(impl[S: Store] Store for Plain<S>, |self| self.0);
/// ```
#[macro_export]
macro_rules! forward_store {
    (impl[$($gen:tt)*] Store for $ty:ty, |$this:ident| $target:expr $(;)?) => {
        $crate::forward_store! {
            impl[$($gen)*] Store for $ty, |$this| $target;
            except [] {}
        }
    };
    (
        impl[$($gen:tt)*] Store for $ty:ty, |$this:ident| $target:expr;
        except [$($except:ident),* $(,)?] { $($own:tt)* }
    ) => {
        impl<$($gen)*> $crate::Store for $ty {
            $crate::__forward_unless! { [$($except),*] now
                fn now(&$this) -> impl ::core::future::Future<
                    Output = ::core::result::Result<$crate::StoreTime, $crate::StoreError>,
                > + ::core::marker::Send {
                    $target.now()
                }
            }
            $crate::__forward_unless! { [$($except),*] enqueue
                fn enqueue(&$this, job: $crate::NewJob) -> impl ::core::future::Future<
                    Output = ::core::result::Result<$crate::JobId, $crate::StoreError>,
                > + ::core::marker::Send {
                    $target.enqueue(job)
                }
            }
            $crate::__forward_unless! { [$($except),*] claim
                fn claim(&$this, req: $crate::ClaimRequest) -> impl ::core::future::Future<
                    Output = ::core::result::Result<
                        ::std::vec::Vec<$crate::Lease>,
                        $crate::StoreError,
                    >,
                > + ::core::marker::Send {
                    $target.claim(req)
                }
            }
            $crate::__forward_unless! { [$($except),*] renew
                fn renew(&$this, req: $crate::RenewRequest) -> impl ::core::future::Future<
                    Output = ::core::result::Result<$crate::Renewal, $crate::StoreError>,
                > + ::core::marker::Send {
                    $target.renew(req)
                }
            }
            $crate::__forward_unless! { [$($except),*] release
                fn release(&$this, req: $crate::ReleaseRequest) -> impl ::core::future::Future<
                    Output = ::core::result::Result<$crate::Release, $crate::StoreError>,
                > + ::core::marker::Send {
                    $target.release(req)
                }
            }
            $crate::__forward_unless! { [$($except),*] batch
                fn batch(&$this, req: $crate::BatchRequest) -> impl ::core::future::Future<
                    Output = ::core::result::Result<$crate::BatchAnswer, $crate::StoreError>,
                > + ::core::marker::Send {
                    $target.batch(req)
                }
            }
            $crate::__forward_unless! { [$($except),*] batch_within
                fn batch_within(
                    &$this,
                    req: $crate::BatchRequest,
                    patience: $crate::Patience,
                ) -> impl ::core::future::Future<
                    Output = ::core::result::Result<$crate::BatchAnswer, $crate::StoreError>,
                > + ::core::marker::Send {
                    $target.batch_within(req, patience)
                }
            }
            $crate::__forward_unless! { [$($except),*] sweep
                fn sweep(&$this, req: $crate::SweepRequest) -> impl ::core::future::Future<
                    Output = ::core::result::Result<
                        ::std::vec::Vec<$crate::CrashReport>,
                        $crate::StoreError,
                    >,
                > + ::core::marker::Send {
                    $target.sweep(req)
                }
            }
            $crate::__forward_unless! { [$($except),*] cancel
                fn cancel(&$this, job: $crate::JobId) -> impl ::core::future::Future<
                    Output = ::core::result::Result<$crate::CancelOutcome, $crate::StoreError>,
                > + ::core::marker::Send {
                    $target.cancel(job)
                }
            }
            $crate::__forward_unless! { [$($except),*] retry_dead
                fn retry_dead(&$this, job: $crate::JobId) -> impl ::core::future::Future<
                    Output = ::core::result::Result<$crate::RetryOutcome, $crate::StoreError>,
                > + ::core::marker::Send {
                    $target.retry_dead(job)
                }
            }
            $crate::__forward_unless! { [$($except),*] get
                fn get(&$this, job: $crate::JobId) -> impl ::core::future::Future<
                    Output = ::core::result::Result<
                        ::core::option::Option<$crate::JobRecord>,
                        $crate::StoreError,
                    >,
                > + ::core::marker::Send {
                    $target.get(job)
                }
            }
            $crate::__forward_unless! { [$($except),*] get_many
                fn get_many(
                    &$this,
                    jobs: ::std::vec::Vec<$crate::JobId>,
                ) -> impl ::core::future::Future<
                    Output = ::core::result::Result<
                        ::std::vec::Vec<::core::option::Option<$crate::JobRecord>>,
                        $crate::StoreError,
                    >,
                > + ::core::marker::Send {
                    $target.get_many(jobs)
                }
            }
            $crate::__forward_unless! { [$($except),*] list
                fn list(&$this, req: $crate::ListRequest) -> impl ::core::future::Future<
                    Output = ::core::result::Result<
                        ::std::vec::Vec<$crate::JobRecord>,
                        $crate::StoreError,
                    >,
                > + ::core::marker::Send {
                    $target.list(req)
                }
            }
            $crate::__forward_unless! { [$($except),*] put_schedule
                fn put_schedule(&$this, schedule: $crate::Schedule) -> impl ::core::future::Future<
                    Output = ::core::result::Result<(), $crate::StoreError>,
                > + ::core::marker::Send {
                    $target.put_schedule(schedule)
                }
            }
            $crate::__forward_unless! { [$($except),*] remove_schedule
                fn remove_schedule(
                    &$this,
                    name: ::std::string::String,
                ) -> impl ::core::future::Future<
                    Output = ::core::result::Result<bool, $crate::StoreError>,
                > + ::core::marker::Send {
                    $target.remove_schedule(name)
                }
            }
            $crate::__forward_unless! { [$($except),*] fire
                fn fire(&$this, req: $crate::FireRequest) -> impl ::core::future::Future<
                    Output = ::core::result::Result<$crate::JobId, $crate::StoreError>,
                > + ::core::marker::Send {
                    $target.fire(req)
                }
            }
            $crate::__forward_unless! { [$($except),*] list_schedules
                fn list_schedules(
                    &$this,
                    req: $crate::ListSchedulesRequest,
                ) -> impl ::core::future::Future<
                    Output = ::core::result::Result<
                        ::std::vec::Vec<$crate::ScheduleRecord>,
                        $crate::StoreError,
                    >,
                > + ::core::marker::Send {
                    $target.list_schedules(req)
                }
            }
            $crate::__forward_unless! { [$($except),*] prune
                fn prune(&$this, req: $crate::PruneRequest) -> impl ::core::future::Future<
                    Output = ::core::result::Result<
                        ::std::vec::Vec<$crate::JobId>,
                        $crate::StoreError,
                    >,
                > + ::core::marker::Send {
                    $target.prune(req)
                }
            }
            $crate::__forward_unless! { [$($except),*] count_jobs
                fn count_jobs(&$this) -> impl ::core::future::Future<
                    Output = ::core::result::Result<$crate::JobCounts, $crate::StoreError>,
                > + ::core::marker::Send {
                    $target.count_jobs()
                }
            }
            $crate::__forward_unless! { [$($except),*] work_available
                fn work_available(
                    &$this,
                    queue: &str,
                ) -> impl ::core::future::Future<Output = ()> + ::core::marker::Send {
                    $target.work_available(queue)
                }
            }
            $($own)*
        }
        // Every name in the list is a `Store` method: a misspelt one would
        // otherwise be forwarded without a word.
        const _: () = {
            #[allow(dead_code)]
            fn named_methods_exist<$($gen)*>() {
                $(let _ = <$ty as $crate::Store>::$except;)*
            }
        };
    };
}

/// The item that follows the method's name, unless the name is in the
/// list (one rule per `Store` method: `macro_rules!` compares names only
/// against literal ones). For [`forward_store!`] only.
#[doc(hidden)]
#[macro_export]
macro_rules! __forward_unless {
    ([] $name:ident $($item:tt)*) => { $($item)* };
    ([now $(, $rest:ident)*] now $($item:tt)*) => {};
    ([enqueue $(, $rest:ident)*] enqueue $($item:tt)*) => {};
    ([claim $(, $rest:ident)*] claim $($item:tt)*) => {};
    ([renew $(, $rest:ident)*] renew $($item:tt)*) => {};
    ([release $(, $rest:ident)*] release $($item:tt)*) => {};
    ([batch $(, $rest:ident)*] batch $($item:tt)*) => {};
    ([batch_within $(, $rest:ident)*] batch_within $($item:tt)*) => {};
    ([sweep $(, $rest:ident)*] sweep $($item:tt)*) => {};
    ([cancel $(, $rest:ident)*] cancel $($item:tt)*) => {};
    ([retry_dead $(, $rest:ident)*] retry_dead $($item:tt)*) => {};
    ([get $(, $rest:ident)*] get $($item:tt)*) => {};
    ([get_many $(, $rest:ident)*] get_many $($item:tt)*) => {};
    ([list $(, $rest:ident)*] list $($item:tt)*) => {};
    ([put_schedule $(, $rest:ident)*] put_schedule $($item:tt)*) => {};
    ([remove_schedule $(, $rest:ident)*] remove_schedule $($item:tt)*) => {};
    ([fire $(, $rest:ident)*] fire $($item:tt)*) => {};
    ([list_schedules $(, $rest:ident)*] list_schedules $($item:tt)*) => {};
    ([prune $(, $rest:ident)*] prune $($item:tt)*) => {};
    ([count_jobs $(, $rest:ident)*] count_jobs $($item:tt)*) => {};
    ([work_available $(, $rest:ident)*] work_available $($item:tt)*) => {};
    ([$other:ident $(, $rest:ident)*] $name:ident $($item:tt)*) => {
        $crate::__forward_unless! { [$($rest),*] $name $($item)* }
    };
}

// A shared store is a store: every operation through the `Arc`. Here, not
// beside the trait, so the trait's file does not reach for its forwarder.
use crate::store::Store;
use std::sync::Arc;

crate::forward_store!(impl[S: Store] Store for Arc<S>, |self| **self);
