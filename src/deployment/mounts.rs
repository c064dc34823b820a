//! Telling an unmounted disk from a replaced one. When a disk fails to mount at boot (an HBA
//! hiccup, a `nofail` race), its mount point is still there: an empty folder on the parent's
//! filesystem. Formatting it would put a blank drive on the system disk, serve from it, and
//! hide the real disk when it mounts again. So where the other drives of a set each have a
//! filesystem of their own, an empty folder that has none is left alone. Drives that share
//! one filesystem (tests, small setups) tell nothing this way and are formatted as before.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Why such a drive is kept offline, for logs.
pub const UNMOUNTED_REASON: &str = "the folder is empty and on its parent's filesystem while \
    the other drives of its set are mount points: a disk that failed to mount? Mount it, or \
    format the folder with `strata admin drive format PATH`";

/// Where a folder sits: its filesystem, and its parent's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub device: u64,
    pub parent_device: u64,
}

impl Placement {
    /// `None` when the folder or its parent cannot be looked at.
    pub fn of(folder: &Path) -> Option<Self> {
        let folder = folder.canonicalize().ok()?;
        let parent = folder.parent()?;
        Some(Self {
            device: std::fs::metadata(&folder).ok()?.dev(),
            parent_device: std::fs::metadata(parent).ok()?.dev(),
        })
    }

    /// A mount point: the folder's filesystem is not its parent's.
    pub fn is_mount_point(self) -> bool {
        self.device != self.parent_device
    }
}

/// Whether an empty drive folder looks like a disk that failed to mount, given where the
/// formatted drives of its set sit.
pub fn looks_unmounted<'a>(folder: &Path, set_members: impl Iterator<Item = &'a Path>) -> bool {
    let Some(folder) = Placement::of(folder) else {
        return false;
    };
    let members: Vec<Placement> = set_members.filter_map(Placement::of).collect();
    failed_mount(folder, &members)
}

/// The rule: the folder is no mount point, and every other drive of the set is one.
pub fn failed_mount(folder: Placement, set_members: &[Placement]) -> bool {
    !folder.is_mount_point()
        && !set_members.is_empty()
        && set_members.iter().all(|member| member.is_mount_point())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT_FS: u64 = 1;

    fn plain_folder() -> Placement {
        Placement {
            device: ROOT_FS,
            parent_device: ROOT_FS,
        }
    }

    fn disk(device: u64) -> Placement {
        Placement {
            device,
            parent_device: ROOT_FS,
        }
    }

    #[test]
    fn an_empty_mount_point_among_mounted_disks_is_a_failed_mount() {
        let members = [disk(10), disk(11), disk(12)];
        assert!(failed_mount(plain_folder(), &members));
    }

    #[test]
    fn a_new_disk_mounted_in_place_is_formatted() {
        let members = [disk(10), disk(11)];
        assert!(!failed_mount(disk(13), &members));
    }

    #[test]
    fn drives_sharing_one_filesystem_keep_formatting_empty_folders() {
        let members = [plain_folder(), plain_folder()];
        assert!(!failed_mount(plain_folder(), &members));
    }

    #[test]
    fn a_set_with_some_drives_on_the_system_disk_proves_nothing() {
        let members = [disk(10), plain_folder()];
        assert!(!failed_mount(plain_folder(), &members));
    }

    #[test]
    fn a_set_with_no_other_formatted_drive_proves_nothing() {
        assert!(!failed_mount(plain_folder(), &[]));
    }

    #[test]
    fn placement_reads_real_folders() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("d1");
        std::fs::create_dir(&inner).unwrap();
        let placement = Placement::of(&inner).unwrap();
        assert!(
            !placement.is_mount_point(),
            "a plain folder is no mount point"
        );
        assert!(Placement::of(&dir.path().join("missing")).is_none());
        // `/proc` is a filesystem of its own wherever this runs.
        assert!(Placement::of(Path::new("/proc")).unwrap().is_mount_point());
    }
}
