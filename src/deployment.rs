//! Opening the drives of a deployment: formatting new ones, checking that every drive sits
//! where its format record says, and grouping them into erasure sets.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context};

use crate::config::ServerConfig;
use crate::erasure::ErasureSet;
use crate::storage::{Drive, Format, LocalDrive, OfflineDrive};

/// The drives of a deployment, opened and grouped.
pub struct Deployment {
    pub id: String,
    pub sets: Vec<ErasureSet>,
    /// Drives that could not be used and are served around (degraded).
    pub offline: Vec<PathBuf>,
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
                let format = Format {
                    version: 1,
                    deployment_id: id.clone(),
                    set_index: position / set_size,
                    drive_index: position % set_size,
                    set_count,
                    data_shards: config.data_shards,
                    parity_shards: config.parity_shards,
                };
                LocalDrive::write_format(path, &format)
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
    let mut offline = Vec::new();
    for (path, format) in config.drives.iter().zip(&formats) {
        let opened = match format {
            Some(_) => LocalDrive::open(path).map_err(|e| e.to_string()),
            None => Err("missing or not formatted".to_string()),
        };
        match opened {
            Ok(drive) => drives.push(Arc::new(drive)),
            Err(reason) => {
                tracing::warn!(drive = %path.display(), %reason, "drive offline; serving degraded");
                offline.push(path.clone());
                drives.push(Arc::new(OfflineDrive::new(path.display().to_string())));
            }
        }
    }

    let mut sets = Vec::new();
    for (index, chunk) in drives.chunks(set_size).enumerate() {
        let online = chunk.len() - offline_in(chunk, &offline);
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
    })
}

fn offline_in(chunk: &[Arc<dyn Drive>], offline: &[PathBuf]) -> usize {
    chunk
        .iter()
        .filter(|d| offline.iter().any(|p| p.display().to_string() == d.label()))
        .count()
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
