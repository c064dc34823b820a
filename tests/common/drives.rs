//! Drive inspection and fault injection on drive folders.

use std::path::{Path, PathBuf};

/// Every shard file (name starting with `part.`) under `<drive>/data`.
pub fn shard_files(drive: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![drive.join("data")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(ft) = entry.file_type() else { continue };
            if ft.is_dir() {
                stack.push(path);
            } else if ft.is_file()
                && entry
                    .file_name()
                    .to_str()
                    .is_some_and(|n| n.starts_with("part."))
            {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Flips bytes throughout `path` (XOR 0xFF at offset 0, 17, every 4099th byte, and the last
/// byte) so both checksums and shard data are damaged; length is unchanged.
pub fn flip_bytes(path: &Path) {
    let mut data = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    if data.is_empty() {
        return;
    }
    let len = data.len();
    let mut offsets = vec![0, 17.min(len - 1), len - 1];
    offsets.extend((0..len).step_by(4099));
    offsets.sort_unstable();
    offsets.dedup();
    for o in offsets {
        data[o] ^= 0xFF;
    }
    std::fs::write(path, &data).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// Copies a directory tree.
pub fn copy_dir_all(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("mkdir {}: {e}", to.display()));
    for entry in std::fs::read_dir(from).unwrap_or_else(|e| panic!("read {}: {e}", from.display()))
    {
        let entry = entry.expect("dir entry");
        let target = to.join(entry.file_name());
        let ft = entry.file_type().expect("file type");
        if ft.is_dir() {
            copy_dir_all(&entry.path(), &target);
        } else if ft.is_file() {
            std::fs::copy(entry.path(), &target)
                .unwrap_or_else(|e| panic!("copy {}: {e}", entry.path().display()));
        }
    }
}
