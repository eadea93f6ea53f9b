//! Rows of a saved index used in place from a file mapped into memory, with the rows added
//! since held in memory after them.
//!
//! A process that opens the saved recall index reads its vectors and their int8 codes straight
//! from the file's pages: the kernel shares them between processes and can drop them under
//! pressure (they are the file's, not the process's), so a large index costs a server its
//! page cache rather than its heap, and opening it costs no decoding. Rows are little-endian
//! and aligned in the file ([`crate::saved`] lays them out); on a big-endian machine nothing is
//! mapped and the index is built instead.

use std::sync::Arc;

use bytemuck::Pod;

/// A whole file mapped read-only.
pub struct MappedFile(memmap2::Mmap);

impl std::fmt::Debug for MappedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MappedFile({} bytes)", self.0.len())
    }
}

impl MappedFile {
    /// Maps the first `len` bytes of `file`, which the caller has checked is a regular file
    /// at least that long.
    ///
    /// # Errors
    /// When the system refuses the mapping.
    #[allow(unsafe_code)]
    pub fn map(file: &std::fs::File, len: usize) -> std::io::Result<Self> {
        // SAFETY: the map is read-only, and Lore never changes a saved file in place: a save
        // writes a new file and renames it over the old one, and a purge unlinks it, neither
        // of which touches the pages of a file already mapped. Only another program
        // truncating the file could make a read fault, as with any mapped index.
        let map = unsafe { memmap2::MmapOptions::new().len(len).map(file)? };
        Ok(Self(map))
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Rows of `T`: the first ones in a mapped file, the rest in memory.
#[derive(Debug)]
pub(crate) struct Slab<T> {
    file: Option<Arc<MappedFile>>,
    /// Where the mapped elements start in the file, in bytes.
    start: usize,
    /// How many elements are mapped.
    mapped: usize,
    owned: Vec<T>,
}

impl<T: Pod> Default for Slab<T> {
    fn default() -> Self {
        Self::from_vec(Vec::new())
    }
}

impl<T: Pod> Slab<T> {
    /// Elements held in memory.
    pub(crate) fn from_vec(owned: Vec<T>) -> Self {
        Self {
            file: None,
            start: 0,
            mapped: 0,
            owned,
        }
    }

    /// `len` elements of `file` from byte `start`; `None` when they lie outside it, are not
    /// aligned for `T`, or the machine is not little-endian (the file's byte order).
    pub(crate) fn mapped(file: Arc<MappedFile>, start: usize, len: usize) -> Option<Self> {
        let bytes = len.checked_mul(size_of::<T>())?;
        let end = start.checked_add(bytes)?;
        if cfg!(target_endian = "big") || end > file.bytes().len() {
            return None;
        }
        bytemuck::try_cast_slice::<u8, T>(&file.bytes()[start..end]).ok()?;
        Some(Self {
            file: Some(file),
            start,
            mapped: len,
            owned: Vec::new(),
        })
    }

    /// The mapped elements.
    #[inline(always)]
    fn head(&self) -> &[T] {
        match &self.file {
            Some(file) => bytemuck::cast_slice(
                &file.bytes()[self.start..self.start + self.mapped * size_of::<T>()],
            ),
            None => &[],
        }
    }

    /// All elements.
    pub(crate) fn len(&self) -> usize {
        self.mapped + self.owned.len()
    }

    /// `len` elements from `at`, which never straddle the mapped and the owned parts (rows
    /// are whole in each).
    #[inline(always)]
    pub(crate) fn range(&self, at: usize, len: usize) -> &[T] {
        if at < self.mapped {
            &self.head()[at..at + len]
        } else {
            &self.owned[at - self.mapped..at - self.mapped + len]
        }
    }

    /// The mapped part and the owned part, in order.
    pub(crate) fn parts(&self) -> (&[T], &[T]) {
        (self.head(), &self.owned)
    }

    /// Appends elements in memory.
    pub(crate) fn extend_from_slice(&mut self, more: &[T]) {
        self.owned.extend_from_slice(more);
    }

    /// The owned part, to append to.
    pub(crate) fn owned_mut(&mut self) -> &mut Vec<T> {
        &mut self.owned
    }

    /// Bytes held in memory (not the mapped ones).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.owned.capacity() * size_of::<T>()
    }

    /// Bytes used in place from the file.
    pub(crate) fn mapped_bytes(&self) -> usize {
        self.mapped * size_of::<T>()
    }

    /// Replaces the first `mapped.len()` elements with `mapped`, which holds the same values
    /// (a file just written from them), and frees their memory. `false`, changing nothing,
    /// when `mapped` is longer than this or starts elsewhere than the owned part.
    pub(crate) fn adopt(&mut self, mapped: Self) -> bool {
        if !mapped.owned.is_empty() || mapped.mapped < self.mapped || mapped.mapped > self.len() {
            return false;
        }
        let moved = mapped.mapped - self.mapped;
        let rest = self.owned.split_off(moved);
        *self = Self {
            owned: rest,
            ..mapped
        };
        true
    }
}
