//! A GPU endpoint's name: `gpu:N`, `gpu:N@OFFSET`, `gpu:N@OFFSET+LEN`.

use crate::error::{Error, Result};
use crate::size::parse_size;

/// Where on which GPU: device number, the first byte of device memory, and
/// how many bytes (the source's length when not given).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceAddress {
    /// The GPU's number (0 is the first the driver lists).
    pub ordinal: usize,
    /// The first byte in the device buffer.
    pub offset: u64,
    /// How many bytes, when the name says.
    pub len: Option<u64>,
}

impl DeviceAddress {
    /// Parses `gpu:N[@OFFSET[+LEN]]`; sizes as people type them (`64M`).
    /// `None` when `text` does not start with `gpu:` (it names something
    /// else: a file called `gpu`, say, is `./gpu`).
    ///
    /// # Errors
    /// [`Error::Usage`] for a name that starts with `gpu:` but is not one.
    ///
    /// # Examples
    /// ```
    /// use flexio::device::DeviceAddress;
    /// let at = DeviceAddress::parse("gpu:1@4K+1M").unwrap().unwrap();
    /// assert_eq!((at.ordinal, at.offset, at.len), (1, 4096, Some(1 << 20)));
    /// assert!(DeviceAddress::parse("model.bin").unwrap().is_none());
    /// assert!(DeviceAddress::parse("gpu:x").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Option<DeviceAddress>> {
        let Some(rest) = text.strip_prefix("gpu:") else {
            return Ok(None);
        };
        let wrong = |why: &str| {
            Error::usage(format!(
                "invalid device {text:?}: {why} (expected gpu:N, gpu:N@OFFSET or gpu:N@OFFSET+LEN)"
            ))
        };
        let (number, place) = match rest.split_once('@') {
            Some((number, place)) => (number, Some(place)),
            None => (rest, None),
        };
        let ordinal = number
            .parse::<usize>()
            .map_err(|_| wrong("the device number is not a number"))?;
        let (offset, len) = match place {
            None => (0, None),
            Some(place) => {
                let (offset, len) = match place.split_once('+') {
                    Some((offset, len)) => (offset, Some(len)),
                    None => (place, None),
                };
                let offset = parse_size(offset).map_err(|_| wrong("the offset is not a size"))?;
                let len = len
                    .map(|len| parse_size(len).map_err(|_| wrong("the length is not a size")))
                    .transpose()?;
                (offset, len)
            }
        };
        if len.is_some_and(|len| offset.checked_add(len).is_none()) {
            return Err(wrong("offset and length overflow"));
        }
        Ok(Some(DeviceAddress {
            ordinal,
            offset,
            len,
        }))
    }
}

impl std::fmt::Display for DeviceAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "gpu:{}", self.ordinal)?;
        if self.offset != 0 || self.len.is_some() {
            write!(f, "@{}", self.offset)?;
        }
        if let Some(len) = self.len {
            write!(f, "+{len}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_parses_and_prints_back() {
        for (text, ordinal, offset, len, printed) in [
            ("gpu:0", 0, 0, None, "gpu:0"),
            ("gpu:3@8192", 3, 8192, None, "gpu:3@8192"),
            ("gpu:0@0+64K", 0, 0, Some(65536), "gpu:0@0+65536"),
            (
                "gpu:1@1M+1G",
                1,
                1 << 20,
                Some(1 << 30),
                "gpu:1@1048576+1073741824",
            ),
        ] {
            let at = DeviceAddress::parse(text).unwrap().unwrap();
            assert_eq!(
                at,
                DeviceAddress {
                    ordinal,
                    offset,
                    len
                },
                "{text}"
            );
            assert_eq!(at.to_string(), printed);
        }
    }

    #[test]
    fn a_wrong_device_name_is_a_usage_error_saying_the_forms() {
        for text in [
            "gpu:",
            "gpu:a",
            "gpu:0@",
            "gpu:0@x",
            "gpu:0@1+",
            "gpu:0@16T+18446744073709551615",
        ] {
            let error = DeviceAddress::parse(text).unwrap_err();
            assert!(error.is_usage(), "{text}");
            assert!(error.to_string().contains("gpu:N@OFFSET+LEN"), "{error}");
        }
        assert_eq!(DeviceAddress::parse("./gpu:0").unwrap(), None);
    }
}
