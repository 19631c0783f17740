//! `impl Store` for a wrapper by forwarding every operation to a field.

/// Implements [`leasehold_core::Store`] for `$ty` by forwarding to `self.$field`.
macro_rules! delegate_store {
    ($ty:ty, $field:ident) => {
        impl leasehold_core::Store for $ty {
            fn now(
                &self,
            ) -> impl std::future::Future<
                Output = Result<leasehold_core::StoreTime, leasehold_core::StoreError>,
            > + Send {
                self.$field.now()
            }
            fn enqueue(
                &self,
                job: leasehold_core::NewJob,
            ) -> impl std::future::Future<
                Output = Result<leasehold_core::JobId, leasehold_core::StoreError>,
            > + Send {
                self.$field.enqueue(job)
            }
            fn claim(
                &self,
                req: leasehold_core::ClaimRequest,
            ) -> impl std::future::Future<
                Output = Result<Vec<leasehold_core::Lease>, leasehold_core::StoreError>,
            > + Send {
                self.$field.claim(req)
            }
            fn renew(
                &self,
                req: leasehold_core::RenewRequest,
            ) -> impl std::future::Future<
                Output = Result<leasehold_core::Renewal, leasehold_core::StoreError>,
            > + Send {
                self.$field.renew(req)
            }
            fn release(
                &self,
                req: leasehold_core::ReleaseRequest,
            ) -> impl std::future::Future<
                Output = Result<leasehold_core::Release, leasehold_core::StoreError>,
            > + Send {
                self.$field.release(req)
            }
            fn sweep(
                &self,
                req: leasehold_core::SweepRequest,
            ) -> impl std::future::Future<
                Output = Result<Vec<leasehold_core::CrashReport>, leasehold_core::StoreError>,
            > + Send {
                self.$field.sweep(req)
            }
            fn cancel(
                &self,
                job: leasehold_core::JobId,
            ) -> impl std::future::Future<
                Output = Result<leasehold_core::CancelOutcome, leasehold_core::StoreError>,
            > + Send {
                self.$field.cancel(job)
            }
            fn get(
                &self,
                job: leasehold_core::JobId,
            ) -> impl std::future::Future<
                Output = Result<Option<leasehold_core::JobRecord>, leasehold_core::StoreError>,
            > + Send {
                self.$field.get(job)
            }
            fn list(
                &self,
                req: leasehold_core::ListRequest,
            ) -> impl std::future::Future<
                Output = Result<Vec<leasehold_core::JobRecord>, leasehold_core::StoreError>,
            > + Send {
                self.$field.list(req)
            }
            fn put_schedule(
                &self,
                schedule: leasehold_core::Schedule,
            ) -> impl std::future::Future<Output = Result<(), leasehold_core::StoreError>> + Send
            {
                self.$field.put_schedule(schedule)
            }
            fn remove_schedule(
                &self,
                name: String,
            ) -> impl std::future::Future<Output = Result<bool, leasehold_core::StoreError>> + Send
            {
                self.$field.remove_schedule(name)
            }
            fn fire(
                &self,
                req: leasehold_core::FireRequest,
            ) -> impl std::future::Future<
                Output = Result<leasehold_core::JobId, leasehold_core::StoreError>,
            > + Send {
                self.$field.fire(req)
            }
            fn list_schedules(
                &self,
                req: leasehold_core::ListSchedulesRequest,
            ) -> impl std::future::Future<
                Output = Result<Vec<leasehold_core::ScheduleRecord>, leasehold_core::StoreError>,
            > + Send {
                self.$field.list_schedules(req)
            }
        }
    };
}
pub(crate) use delegate_store;
