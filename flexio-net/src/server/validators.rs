//! A file's validators (ETag, Last-Modified), as every answer about a
//! file and every precondition compares them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::fs::Stat;

/// A file's validators.
pub(crate) struct Validators {
    pub etag: String,
    pub last_modified: String,
    pub mtime: i64,
}

impl Validators {
    pub fn of(stat: &Stat) -> Self {
        Validators {
            etag: format!(
                "\"{:x}-{:x}-{:x}.{:x}\"",
                stat.st_ino, stat.st_size, stat.st_mtime, stat.st_mtime_nsec
            ),
            last_modified: httpdate::fmt_http_date(system_time(stat.st_mtime)),
            mtime: stat.st_mtime,
        }
    }
}

pub(crate) fn system_time(seconds: i64) -> SystemTime {
    if seconds >= 0 {
        UNIX_EPOCH + Duration::from_secs(seconds as u64)
    } else {
        UNIX_EPOCH - Duration::from_secs(seconds.unsigned_abs())
    }
}
