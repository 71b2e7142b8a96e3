//! The C data model a host op library is built in (D97): the build flow builds in it, and
//! the front ends name it (`--data-model`, `data_model=`, `$GPSIMD_OPEN_DATA_MODEL`).

/// Which data model a host op library is built in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DataModel {
    /// The device's (i386 with the device's sizes, the device's libraries): what host
    /// cores compute is what the device computes for the same source (D97).
    #[default]
    Device,
    /// The host's (x86-64 LP64 with glibc and libstdc++): 64-bit `long`, signed `char`
    /// is not (D92), the host's C++ library; results can differ from the device's.
    Host,
}

impl DataModel {
    /// Its name on command lines and in Python (`device`, `host`).
    pub fn name(self) -> &'static str {
        match self {
            DataModel::Device => "device",
            DataModel::Host => "host",
        }
    }

    pub fn from_name(name: &str) -> Option<DataModel> {
        [DataModel::Device, DataModel::Host]
            .into_iter()
            .find(|m| m.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_model_names_round_trip() {
        for m in [DataModel::Device, DataModel::Host] {
            assert_eq!(DataModel::from_name(m.name()), Some(m));
        }
        assert_eq!(DataModel::from_name("lp64"), None);
        assert_eq!(DataModel::default(), DataModel::Device);
    }
}
