//! The trees of the `tree` scenario, made from a fixed seed so every run
//! and every machine copies the same bytes.

use std::fs;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::error::{Error, Result};

/// A tree of the scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TreeShape {
    /// 20 000 files of 4 KiB in 200 directories.
    A,
    /// 1 000 files of 1 MiB.
    B,
    /// 4 files of 256 MiB and 2 000 of 16 KiB.
    C,
    /// A with 10% symlinks, 5% hard links and 2 sparse 1 GiB files.
    D,
    /// The OS project's Fig 5 (1000 MB in 1, 5 or 10 files), scaled to
    /// 100 MiB: as one file (`os-fig5-1`).
    Fig1,
    /// ... as 5 files of 20 MiB (`os-fig5-5`).
    Fig5,
    /// ... as 10 files of 10 MiB (`os-fig5-10`).
    Fig10,
    /// Not the OS project's: the same 100 MiB as 10 000 files of 10 KiB
    /// in 100 directories (`files-10000`), where per-file costs dominate.
    Fig10000,
}

impl TreeShape {
    /// Every tree, in the order a run makes them.
    pub const ALL: [TreeShape; 8] = [
        TreeShape::A,
        TreeShape::B,
        TreeShape::C,
        TreeShape::D,
        TreeShape::Fig1,
        TreeShape::Fig5,
        TreeShape::Fig10,
        TreeShape::Fig10000,
    ];

    /// Its name in tables and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            TreeShape::A => "A",
            TreeShape::B => "B",
            TreeShape::C => "C",
            TreeShape::D => "D",
            TreeShape::Fig1 => "os-fig5-1",
            TreeShape::Fig5 => "os-fig5-5",
            TreeShape::Fig10 => "os-fig5-10",
            TreeShape::Fig10000 => "files-10000",
        }
    }

    /// Parses a name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Only contenders that keep links and holes copy this tree fairly.
    pub fn needs_archive(self) -> bool {
        self == TreeShape::D
    }
}

/// Deterministic bytes for file `index` (xorshift, fixed seed).
fn fill(buffer: &mut [u8], index: u64) {
    let mut state = index.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for chunk in buffer.chunks_mut(8) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let bytes = state.to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
}

fn write(path: &Path, len: usize, index: u64, buffer: &mut Vec<u8>) -> Result<()> {
    buffer.resize(len, 0);
    fill(buffer, index);
    fs::File::create(path)
        .and_then(|mut f| f.write_all(buffer))
        .map_err(|e| Error::io("write", path, e))
}

fn scaled(count: usize, scale: f64) -> usize {
    ((count as f64 * scale).round() as usize).max(1)
}

/// Makes `shape` (scaled) at `root`; returns its file count and bytes.
///
/// # Errors
/// Any file or directory that cannot be made.
pub fn make_tree(root: &Path, shape: TreeShape, scale: f64) -> Result<(u64, u64)> {
    let _ = fs::remove_dir_all(root);
    fs::create_dir_all(root).map_err(|e| Error::io("mkdir", root, e))?;
    let mut buffer = Vec::new();
    let mut files = 0u64;
    let mut bytes = 0u64;
    let mut many = |dirs: usize, per_dir: usize, len: usize, salt: u64| -> Result<()> {
        for d in 0..dirs {
            let dir = root.join(format!("d{d:03}"));
            fs::create_dir_all(&dir).map_err(|e| Error::io("mkdir", &dir, e))?;
            for f in 0..per_dir {
                let index = salt + (d * per_dir + f) as u64;
                write(&dir.join(format!("f{f:04}")), len, index, &mut buffer)?;
                files += 1;
                bytes += len as u64;
            }
        }
        Ok(())
    };
    match shape {
        TreeShape::A | TreeShape::D => many(scaled(200, scale), 100, 4096, 0)?,
        TreeShape::B => many(10, scaled(100, scale), 1 << 20, 1 << 20)?,
        TreeShape::C => many(20, scaled(100, scale), 16 << 10, 2 << 20)?,
        TreeShape::Fig1 => many(1, 1, scaled(100 << 20, scale), 3 << 20)?,
        TreeShape::Fig5 => many(1, 5, scaled(20 << 20, scale), 4 << 20)?,
        TreeShape::Fig10 => many(1, 10, scaled(10 << 20, scale), 5 << 20)?,
        TreeShape::Fig10000 => many(100, 100, scaled(10 << 10, scale), 6 << 20)?,
    }
    if shape == TreeShape::C {
        for f in 0..4u64 {
            let len = scaled(256 << 20, scale);
            write(
                &root.join(format!("large{f}")),
                len,
                7 << 20 | f,
                &mut buffer,
            )?;
            files += 1;
            bytes += len as u64;
        }
    }
    if shape == TreeShape::D {
        decorate(root, scale, &mut buffer)?;
    }
    Ok((files, bytes))
}

/// Tree D's extras on top of A: every tenth file becomes a symlink to its
/// neighbour, every twentieth a hard link, and two sparse files.
fn decorate(root: &Path, scale: f64, buffer: &mut Vec<u8>) -> Result<()> {
    for d in 0..scaled(200, scale) {
        let dir = root.join(format!("d{d:03}"));
        for f in (0..100).step_by(10) {
            let path = dir.join(format!("f{f:04}"));
            fs::remove_file(&path).map_err(|e| Error::io("remove", &path, e))?;
            std::os::unix::fs::symlink(format!("f{:04}", f + 1), &path)
                .map_err(|e| Error::io("symlink", &path, e))?;
        }
        for f in (5..100).step_by(20) {
            let path = dir.join(format!("f{f:04}"));
            fs::remove_file(&path).map_err(|e| Error::io("remove", &path, e))?;
            fs::hard_link(dir.join(format!("f{:04}", f + 1)), &path)
                .map_err(|e| Error::io("hard link", &path, e))?;
        }
    }
    for s in 0..2u64 {
        let path = root.join(format!("sparse{s}"));
        let file = fs::File::create(&path).map_err(|e| Error::io("create", &path, e))?;
        let size = scaled(1 << 30, scale) as u64;
        buffer.resize(1 << 20, 0);
        fill(buffer, 9 << 20 | s);
        let written = file
            .write_all_at(buffer, 0)
            .and_then(|()| file.write_all_at(buffer, size / 2));
        written.map_err(|e| Error::io("write", &path, e))?;
        file.set_len(size)
            .map_err(|e| Error::io("set the length of", &path, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_that_cannot_be_made_says_the_operation_and_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, b"not a directory").unwrap();
        let root = file.join("tree");
        let error = make_tree(&root, TreeShape::Fig1, 0.01).unwrap_err();
        let Error::Io {
            operation, path, ..
        } = &error
        else {
            panic!("not an Io error: {error:?}");
        };
        assert_eq!(*operation, "mkdir");
        assert_eq!(*path, root);
        assert!(error
            .to_string()
            .starts_with(&format!("mkdir {}: ", root.display())));
    }

    #[test]
    fn the_os_projects_trees_are_its_fig_5_one_total_in_1_5_and_10_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut totals = Vec::new();
        for (shape, count) in [
            (TreeShape::Fig1, 1),
            (TreeShape::Fig5, 5),
            (TreeShape::Fig10, 10),
        ] {
            assert_eq!(shape.name(), format!("os-fig5-{count}"));
            let (files, bytes) = make_tree(&dir.path().join(shape.name()), shape, 0.01).unwrap();
            assert_eq!(files, count, "{}", shape.name());
            totals.push(bytes);
        }
        // One total (100 MiB scaled), give or take the rounding of each
        // file's share.
        let (low, high) = (totals.iter().min().unwrap(), totals.iter().max().unwrap());
        assert!(high - low <= 10, "{totals:?}");
        assert_eq!(TreeShape::from_name("fig4-1"), None);
        assert_eq!(
            TreeShape::from_name("files-10000"),
            Some(TreeShape::Fig10000)
        );
    }
}
