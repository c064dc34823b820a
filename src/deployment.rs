//! Opening the drives of a deployment: formatting new ones, checking that every drive sits
//! where its format record says, and grouping them into erasure sets.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context};

use crate::config::ServerConfig;
use crate::erasure::ErasureSet;
use crate::storage::{DeadlineDrive, Drive, DriveSlot, Format, LocalDrive, OfflineDrive};

/// The drives of a deployment, opened and grouped.
pub struct Deployment {
    pub id: String,
    pub sets: Vec<ErasureSet>,
    /// Drives that could not be used and are served around (degraded).
    pub offline: Vec<PathBuf>,
    /// Every drive position, in command-line order, for the drive monitor.
    pub drives: Vec<DrivePosition>,
    /// Empty drives formatted into their position at this start: their sets need healing.
    pub formatted: Vec<PathBuf>,
}

/// One drive position: where it is, and the slot its set reads and writes through.
pub struct DrivePosition {
    pub path: PathBuf,
    pub set_index: usize,
    pub slot: Arc<DriveSlot>,
    online: AtomicBool,
    /// Back in service but not yet given everything it missed.
    healing: AtomicBool,
}

impl DrivePosition {
    pub fn is_online(&self) -> bool {
        self.online.load(Ordering::Relaxed)
    }

    /// Online but missing its deadlines: requests are served around it.
    pub fn is_stalled(&self) -> bool {
        self.is_online() && self.slot.is_stalled()
    }

    pub fn is_healing(&self) -> bool {
        self.is_online() && self.healing.load(Ordering::Relaxed)
    }
}

/// What the drive monitor found at one position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriveChange {
    /// The drive went away (folder removed, format record gone).
    WentOffline(PathBuf),
    /// The drive came back with its format record: it may have missed writes.
    Returned(PathBuf),
    /// An empty drive took the position and was formatted into it: it needs everything.
    Replaced(PathBuf),
}

impl DriveChange {
    /// Whether the drive's set needs healing after this change.
    pub fn needs_heal(&self) -> bool {
        !matches!(self, DriveChange::WentOffline(_))
    }
}

/// Opens (and on first start formats) every drive.
pub fn open(config: &ServerConfig) -> anyhow::Result<Deployment> {
    let set_size = config.data_shards + config.parity_shards;
    let set_count = config.drives.len() / set_size;
    let formats: Vec<Option<Format>> = config
        .drives
        .iter()
        .map(|path| LocalDrive::read_format(path).ok().flatten())
        .collect();

    let deployment_id = match formats.iter().flatten().next() {
        Some(first) => first.deployment_id.clone(),
        None => {
            let id = uuid::Uuid::new_v4().to_string();
            for (position, path) in config.drives.iter().enumerate() {
                LocalDrive::write_format(path, &format_for(config, &id, position))
                    .with_context(|| format!("formatting drive {}", path.display()))?;
            }
            tracing::info!(deployment = %id, drives = config.drives.len(), "formatted new drives");
            return open(config);
        }
    };

    for (position, (path, format)) in config.drives.iter().zip(&formats).enumerate() {
        let Some(format) = format else { continue };
        check_format(path, format, position, &deployment_id, config, set_count)?;
    }

    let mut drives: Vec<Arc<dyn Drive>> = Vec::new();
    let mut positions = Vec::new();
    let mut offline = Vec::new();
    let mut formatted = Vec::new();
    for (position, (path, format)) in config.drives.iter().zip(&formats).enumerate() {
        let formatted_before = formatted.len();
        let opened = match format {
            Some(_) => open_local(path),
            // An empty folder in a known deployment is a replaced drive: it takes its place.
            None if path.is_dir() => {
                format_into_place(path, &format_for(config, &deployment_id, position))
                    .inspect(|_| formatted.push(path.clone()))
            }
            None => Err("missing".to_string()),
        };
        let (drive, online): (Arc<dyn Drive>, bool) = match opened {
            Ok(drive) => (with_deadline(drive, config), true),
            Err(reason) => {
                tracing::warn!(drive = %path.display(), %reason, "drive offline; serving degraded");
                offline.push(path.clone());
                (
                    Arc::new(OfflineDrive::new(path.display().to_string())),
                    false,
                )
            }
        };
        let slot = Arc::new(DriveSlot::new(path.display().to_string(), drive));
        drives.push(slot.clone());
        positions.push(DrivePosition {
            path: path.clone(),
            set_index: position / set_size,
            slot,
            online: AtomicBool::new(online),
            healing: AtomicBool::new(formatted.len() > formatted_before),
        });
    }

    let mut sets = Vec::new();
    for (index, chunk) in drives.chunks(set_size).enumerate() {
        let online = positions[index * set_size..(index + 1) * set_size]
            .iter()
            .filter(|p| p.is_online())
            .count();
        if online < config.data_shards {
            tracing::error!(set = index, online, "erasure set has fewer drives than data shards; it cannot serve until drives return");
        }
        sets.push(ErasureSet::new(
            index,
            chunk.to_vec(),
            config.parity_shards,
            config.block_size,
        )?);
    }
    Ok(Deployment {
        id: deployment_id,
        sets,
        offline,
        drives: positions,
        formatted,
    })
}

impl Deployment {
    /// A heal pass over everything finished: the drives back in service have all they missed.
    pub fn healed(&self) {
        for drive in &self.drives {
            drive.healing.store(false, Ordering::Relaxed);
        }
    }

    /// Looks at every drive position once: a drive that went away is taken out of service, a
    /// drive that came back is reopened, and an empty folder in a failed drive's place is
    /// formatted into that position. Blocking: call it on the blocking pool.
    pub fn check_drives(&self, config: &ServerConfig) -> Vec<DriveChange> {
        let mut changes = Vec::new();
        for (position, drive) in self.drives.iter().enumerate() {
            let format = LocalDrive::read_format(&drive.path).ok().flatten();
            if drive.is_online() {
                if format.is_none() {
                    drive.online.store(false, Ordering::Relaxed);
                    let label = drive.path.display().to_string();
                    drive.slot.replace(Arc::new(OfflineDrive::new(label)));
                    tracing::warn!(drive = %drive.path.display(), "drive went offline");
                    changes.push(DriveChange::WentOffline(drive.path.clone()));
                }
                continue;
            }
            let set_count = self.drives.len() / (config.data_shards + config.parity_shards);
            let (opened, change) = match format {
                Some(format) => {
                    if let Err(e) =
                        check_format(&drive.path, &format, position, &self.id, config, set_count)
                    {
                        tracing::error!(error = %e, "drive not taken back");
                        continue;
                    }
                    (
                        open_local(&drive.path),
                        DriveChange::Returned(drive.path.clone()),
                    )
                }
                None if drive.path.is_dir() => (
                    format_into_place(&drive.path, &format_for(config, &self.id, position)),
                    DriveChange::Replaced(drive.path.clone()),
                ),
                None => continue,
            };
            match opened {
                Ok(local) => {
                    drive.slot.replace(with_deadline(local, config));
                    drive.healing.store(true, Ordering::Relaxed);
                    drive.online.store(true, Ordering::Relaxed);
                    tracing::info!(drive = %drive.path.display(), change = ?change, "drive back in service");
                    changes.push(change);
                }
                Err(reason) => {
                    tracing::warn!(drive = %drive.path.display(), %reason, "drive still offline")
                }
            }
        }
        changes
    }
}

/// The format record of the drive at `position` of the command line.
fn format_for(config: &ServerConfig, deployment_id: &str, position: usize) -> Format {
    let set_size = config.data_shards + config.parity_shards;
    Format {
        version: 1,
        deployment_id: deployment_id.to_string(),
        set_index: position / set_size,
        drive_index: position % set_size,
        set_count: config.drives.len() / set_size,
        data_shards: config.data_shards,
        parity_shards: config.parity_shards,
    }
}

/// Opens a drive folder. A metadata database damaged in a way its library does not expect
/// (a truncated redb file) makes it panic rather than fail: that drive is then offline, not
/// the whole server.
fn open_local(path: &Path) -> Result<LocalDrive, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| LocalDrive::open(path)))
        .map_err(|panic| {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            format!("opening the drive panicked (damaged metadata database?): {message}")
        })?
        .map_err(|e| e.to_string())
}

/// A drive as the erasure sets use it: every call under the configured deadline, so that a
/// drive that stops answering is served around instead of holding requests.
fn with_deadline(drive: LocalDrive, config: &ServerConfig) -> Arc<dyn Drive> {
    Arc::new(DeadlineDrive::new(
        Arc::new(drive),
        config.healing.drive_timeout,
    ))
}

/// Formats an empty drive folder into a position of the deployment and opens it.
fn format_into_place(path: &Path, format: &Format) -> Result<LocalDrive, String> {
    LocalDrive::write_format(path, format).map_err(|e| e.to_string())?;
    tracing::info!(drive = %path.display(), set = format.set_index + 1, position = format.drive_index + 1, "formatted an empty drive into its position; it will be healed");
    open_local(path)
}

fn check_format(
    path: &Path,
    format: &Format,
    position: usize,
    deployment_id: &str,
    config: &ServerConfig,
    set_count: usize,
) -> anyhow::Result<()> {
    let set_size = config.data_shards + config.parity_shards;
    if format.deployment_id != deployment_id {
        bail!(
            "drive {} belongs to another deployment ({}, expected {deployment_id}); \
             remove it from the command line or replace it with an empty folder",
            path.display(),
            format.deployment_id
        );
    }
    if (format.data_shards, format.parity_shards, format.set_count)
        != (config.data_shards, config.parity_shards, set_count)
    {
        bail!(
            "drive {} was formatted for {} set(s) of {}+{}, but this start asks for {set_count} \
             set(s) of {}+{}",
            path.display(),
            format.set_count,
            format.data_shards,
            format.parity_shards,
            config.data_shards,
            config.parity_shards
        );
    }
    let expected = (position / set_size, position % set_size);
    if (format.set_index, format.drive_index) != expected {
        bail!(
            "drive {} is at position {} of the command line, but it was formatted as drive {} \
             of set {}; drives must be given in their original order",
            path.display(),
            position + 1,
            format.drive_index + 1,
            format.set_index + 1
        );
    }
    Ok(())
}
