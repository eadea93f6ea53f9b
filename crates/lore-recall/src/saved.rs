//! The recall index's file beside the store: what lets a new process skip building the HNSW
//! graph, which is nearly all of a build's time (a minute at 100k lessons), and hold the
//! vectors without reading them from the store or keeping them in its own memory.
//!
//! The file holds what is slow to make and cheap to check: the graph's links, per slot the
//! lesson it was made for (its ID and the hash of its text), and the vectors the graph links,
//! as int8 codes and as floats, laid out to be used in place from the mapped file
//! ([`crate::mapped`]). Lessons and BM25 postings are read from the store again when the file
//! is loaded, and every slot is checked against the lesson the store holds now: a slot is kept
//! only when its lesson is still retrievable with the text whose hash it carries, and the
//! header's embedder and fit are the store's, so its vector is the one the store holds for the
//! lesson. The file can make a load faster but never change an answer; deleting it only costs
//! time. It names no text and keeps nothing of a removed slot (no ID, a vector of zeros), and
//! purging a lesson deletes the file.
//!
//! Layout, little-endian: the magic, the format version, a JSON header (the store revision it
//! reflects, the embedder state, the retrievable statuses, the graph's parameters, the
//! dimension and the slot count), the slots, a flag and the graph; then, aligned to 64 bytes,
//! each slot's code followed by its scale, and, aligned again, each slot's float vector; then
//! a CRC-32 of everything before it. Only a regular file is read, mapped after its size is
//! checked; anything that does not read back exactly (another version, a bad checksum, a
//! truncated file, a graph or rows that do not fit its slots) is refused with a reason, and
//! the caller builds from the store instead. Writes stream to a temporary file in the same
//! folder, renamed over the old one: a reader sees the old file or the new one, never half of
//! one, a process that has mapped the old one keeps reading it unchanged, and when two
//! processes save at once the last rename wins with a whole file.
//!
//! Other records' indexes (knowledge chunks, decisions) save the same way through their own
//! [`Format`]: another magic and header, and, for records whose store keeps no vector, each
//! slot's vector after the graph, so that a new process neither builds a graph nor embeds again.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::hnsw::{take, take_u32};
use crate::mapped::MappedFile;
use crate::{EmbedderId, Hnsw, HnswParams, Rows};
use lore_core::model::LessonStatus;

/// What the store remembers about the embedder that made its vectors.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EmbedderState {
    /// The embedder as configured (before any fit): what a query must use.
    pub base: EmbedderId,
    /// The embedder as fitted: the identity stored with every vector.
    pub fitted: EmbedderId,
    /// How many lessons the fit was made on.
    pub fit_docs: usize,
}

/// The name the store's [`lore_core::ports::store::Store::derived_path`] is asked for.
pub const NAME: &str = "recall";

const MAGIC: &[u8; 8] = b"LORE-RIX";
/// Changed whenever the layout or the meaning of a field changes.
const VERSION: u32 = 2;

/// Where the rows used in place start in the file: a cache line, so that a row's first code
/// or vector does not straddle two for want of a few bytes, and every `f32` is aligned.
const ALIGN: usize = 64;

/// What the file was made from; a load needs every field to match.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// The store's lesson revision the index reflected when it was written.
    pub revision: u64,
    /// The embedder (as configured and as fitted) that made the vectors the graph links.
    pub state: EmbedderState,
    /// The statuses the index held.
    pub statuses: Vec<LessonStatus>,
    /// The HNSW graph's construction parameters.
    pub params: HnswParams,
    /// The vectors' dimension.
    pub dim: usize,
    /// How many slots follow the header.
    pub slots: usize,
}

/// One slot: the lesson it holds and the hash of the text its vector was made from; an empty
/// ID for a removed slot.
#[derive(Clone, Debug, PartialEq)]
pub struct Slot {
    /// The lesson's ID; empty for a removed slot.
    pub id: String,
    /// The hash of the text its vector was made from.
    pub hash: u64,
}

/// What a kind of saved index puts in its header: the reader needs the slot count and the
/// graph's parameters before it can read on, and refuses a file of another kind by its magic.
pub trait Format: Serialize + DeserializeOwned {
    /// The first eight bytes of the file.
    const MAGIC: &'static [u8; 8];
    /// Changed whenever the layout or the meaning of a field changes.
    const VERSION: u32;
    /// How many slots follow the header.
    fn slots(&self) -> usize;
    /// The HNSW graph's construction parameters.
    fn params(&self) -> HnswParams;
    /// The dimension of the vectors the file carries after its graph, one per slot; `None`
    /// when it carries none (the store keeps them).
    fn carried_dim(&self) -> Option<usize> {
        None
    }
    /// The dimension of the vectors the file lays out after its graph to be used in place
    /// (each slot's int8 code and scale, then each slot's float vector, each part aligned);
    /// `None` when it lays out none.
    fn mapped_dim(&self) -> Option<usize> {
        None
    }
}

impl Format for Header {
    const MAGIC: &'static [u8; 8] = MAGIC;
    const VERSION: u32 = VERSION;

    fn slots(&self) -> usize {
        self.slots
    }

    fn params(&self) -> HnswParams {
        self.params
    }

    fn mapped_dim(&self) -> Option<usize> {
        Some(self.dim)
    }
}

/// Rows of a file to be used in place: where its codes and its float vectors start in the
/// mapped file (see [`crate::VectorIndex::restore_mapped`]).
#[derive(Clone, Debug)]
pub struct MappedRows {
    /// The whole file, mapped.
    pub file: Arc<MappedFile>,
    /// The byte offsets of the codes and of the float vectors.
    pub at: (usize, usize),
}

/// A file read back whole.
#[derive(Debug)]
pub struct Loaded<H = Header> {
    /// What the index was built from.
    pub header: H,
    /// One per slot, in slot order.
    pub slots: Vec<Slot>,
    /// The graph, when the index was large enough to have one.
    pub graph: Option<Hnsw>,
    /// The carried vectors, slot-major (see [`Format::carried_dim`]); empty when none are.
    pub vectors: Vec<f32>,
    /// The rows laid out to be used in place (see [`Format::mapped_dim`]).
    pub mapped: Option<MappedRows>,
}

/// Writes the file at `path` atomically (temporary file, then rename).
///
/// # Errors
/// Any I/O failure; the old file, if any, is left as it was.
pub fn write<H: Format>(
    path: &Path,
    header: &H,
    slots: &[Slot],
    graph: Option<&Hnsw>,
) -> std::io::Result<()> {
    write_carrying(path, header, slots, graph, &[])
}

/// [`write`], with `vectors` (slot-major, [`Format::carried_dim`] components each) after the
/// graph.
///
/// # Errors
/// Any I/O failure, or vectors that do not fill the slots; the old file is left as it was.
pub fn write_carrying<H: Format>(
    path: &Path,
    header: &H,
    slots: &[Slot],
    graph: Option<&Hnsw>,
    vectors: &[f32],
) -> std::io::Result<()> {
    let carried = header.carried_dim().map_or(0, |dim| dim * slots.len());
    if vectors.len() != carried {
        return Err(std::io::Error::other(format!(
            "{} vector components for {} slots",
            vectors.len(),
            slots.len()
        )));
    }
    write_file(path, header, slots, graph, |out| out.floats(vectors)).map(|_| ())
}

/// [`write`], with `rows` laid out after the graph to be used in place
/// ([`Format::mapped_dim`]). Returns the file just written, mapped, with where its rows start:
/// the caller can read the rows from there and free its own copy.
///
/// # Errors
/// Any I/O failure, or rows that do not fill the slots; the old file is left as it was.
pub fn write_mapped<H: Format>(
    path: &Path,
    header: &H,
    slots: &[Slot],
    graph: Option<&Hnsw>,
    rows: Rows<'_>,
) -> std::io::Result<MappedRows> {
    let dim = header.mapped_dim().unwrap_or(0);
    let n = slots.len();
    if rows.codes.0.len() + rows.codes.1.len() != n * (dim + 4)
        || rows.vectors.0.len() + rows.vectors.1.len() != n * dim
        || rows.live.len() != n
    {
        return Err(std::io::Error::other(format!(
            "rows of another size than {n} slots of {dim} components"
        )));
    }
    let (file, at) = write_file(path, header, slots, graph, |out| {
        // A removed slot's row is zeros: the file keeps nothing of a lesson that left (a
        // purge deletes the file, and the next save must not write its vector back).
        let codes_at = out.align()?;
        let codes = rows
            .codes
            .0
            .chunks_exact(dim + 4)
            .chain(rows.codes.1.chunks_exact(dim + 4));
        let mut buf = Vec::with_capacity(1 << 16);
        for (row, &live) in codes.zip(rows.live) {
            if live {
                buf.extend_from_slice(bytemuck::cast_slice(row));
            } else {
                buf.resize(buf.len() + row.len(), 0);
            }
            if buf.len() >= 1 << 16 {
                out.put(&buf)?;
                buf.clear();
            }
        }
        out.put(&buf)?;
        let vectors_at = out.align()?;
        let step = dim.max(1);
        let vectors = rows
            .vectors
            .0
            .chunks_exact(step)
            .chain(rows.vectors.1.chunks_exact(step));
        let zeros = vec![0.0; dim];
        for (row, &live) in vectors.zip(rows.live) {
            out.floats(if live { row } else { &zeros })?;
        }
        Ok((codes_at, vectors_at))
    })?;
    Ok(MappedRows {
        file: Arc::new(file),
        at,
    })
}

/// The file being written, with the checksum of what went in so far.
struct Out {
    file: BufWriter<std::fs::File>,
    crc: crc32fast::Hasher,
    at: usize,
    /// Floats turned into bytes, reused: a save writes a vector at a time.
    scratch: Vec<u8>,
}

impl Out {
    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.crc.update(bytes);
        self.at += bytes.len();
        self.file.write_all(bytes)
    }

    /// Little-endian, whatever the machine.
    fn floats(&mut self, values: &[f32]) -> std::io::Result<()> {
        let mut buf = std::mem::take(&mut self.scratch);
        for chunk in values.chunks(4096) {
            buf.clear();
            for v in chunk {
                buf.extend_from_slice(&v.to_le_bytes());
            }
            self.put(&buf)?;
        }
        self.scratch = buf;
        Ok(())
    }

    /// Zeros up to the next [`ALIGN`] bytes; returns the offset reached.
    fn align(&mut self) -> std::io::Result<usize> {
        let to = self.at.next_multiple_of(ALIGN);
        self.put(&[0; ALIGN][..to - self.at])?;
        Ok(to)
    }
}

/// Writes the header, slots and graph, then what `tail` adds, then the checksum, to a
/// temporary file renamed over `path`; returns that file mapped, and what `tail` returned.
/// The file is mapped before the rename, so the map is of what this call wrote even if
/// another process renames its own file over it at once.
fn write_file<H: Format, T>(
    path: &Path,
    header: &H,
    slots: &[Slot],
    graph: Option<&Hnsw>,
    tail: impl FnOnce(&mut Out) -> std::io::Result<T>,
) -> std::io::Result<(MappedFile, T)> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = temp_path(path);
    let written = (|| {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        let mut out = Out {
            file: BufWriter::with_capacity(1 << 20, file),
            crc: crc32fast::Hasher::new(),
            at: 0,
            scratch: Vec::new(),
        };
        out.put(H::MAGIC)?;
        out.put(&H::VERSION.to_le_bytes())?;
        let json = serde_json::to_vec(header).map_err(std::io::Error::other)?;
        out.put(&(json.len() as u32).to_le_bytes())?;
        out.put(&json)?;
        let mut buf = Vec::with_capacity(64 * slots.len().min(16_384));
        for chunk in slots.chunks(16_384) {
            buf.clear();
            for slot in chunk {
                buf.extend_from_slice(&slot.hash.to_le_bytes());
                buf.extend_from_slice(&(slot.id.len() as u16).to_le_bytes());
                buf.extend_from_slice(slot.id.as_bytes());
            }
            out.put(&buf)?;
        }
        buf = Vec::new();
        match graph {
            Some(graph) => {
                buf.push(1);
                graph.encode(&mut buf);
            }
            None => buf.push(0),
        }
        out.put(&buf)?;
        drop(buf);
        let made = tail(&mut out)?;
        let crc = out.crc.clone().finalize();
        out.put(&crc.to_le_bytes())?;
        let len = out.at;
        let file = out.file.into_inner().map_err(|e| e.into_error())?;
        let mapped = MappedFile::map(&file, len)?;
        drop(file);
        std::fs::rename(&tmp, path)?;
        Ok((mapped, made))
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// A temporary name beside `path`, unique to this process and call.
fn temp_path(path: &Path) -> PathBuf {
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = path
        .file_name()
        .map_or_else(|| NAME.into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.{}.{n}.tmp", std::process::id()))
}

/// Reads the file at `path`: `Ok(None)` when there is none, `Err(why)` when it cannot be used.
///
/// Only a regular file is read, and never past the length it had when opened: a link to a
/// device such as `/dev/zero`, or a file growing under the reader, would otherwise be read
/// until memory runs out.
pub fn read<H: Format>(path: &Path) -> Result<Option<Loaded<H>>, String> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot be read: {e}")),
    };
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot be read: {e}"))?;
    if !meta.is_file() {
        return Err("is not a regular file".into());
    }
    let len = usize::try_from(meta.len()).map_err(|_| "is too large")?;
    // The smallest file this build writes; a shorter one is not mapped at all.
    if len < H::MAGIC.len() + 4 + 4 + 1 + 4 {
        return Err("is not a Lore recall index of this kind (or is truncated)".into());
    }
    let map = MappedFile::map(&file, len).map_err(|e| format!("cannot be mapped: {e}"))?;
    drop(file);
    let map = Arc::new(map);
    decode(map.bytes(), &map).map(Some)
}

fn decode<H: Format>(bytes: &[u8], map: &Arc<MappedFile>) -> Result<Loaded<H>, String> {
    if bytes.len() < H::MAGIC.len() + 4 + 4 + 1 + 4 || &bytes[..H::MAGIC.len()] != H::MAGIC {
        return Err("is not a Lore recall index of this kind (or is truncated)".into());
    }
    let (body, crc) = bytes.split_at(bytes.len() - 4);
    let version = u32::from_le_bytes(body[8..12].try_into().expect("4 bytes"));
    if version != H::VERSION {
        return Err(format!(
            "has format version {version}, this build reads {}",
            H::VERSION
        ));
    }
    if crc32fast::hash(body) != u32::from_le_bytes(crc.try_into().expect("4 bytes")) {
        return Err("fails its checksum (damaged or truncated)".into());
    }
    let mut rest = &body[12..];
    let truncated = || "ends early".to_string();
    let header_len = take_u32(&mut rest).ok_or_else(truncated)? as usize;
    let header: H = serde_json::from_slice(take(&mut rest, header_len).ok_or_else(truncated)?)
        .map_err(|e| format!("has an unreadable header: {e}"))?;
    let count = header.slots();
    // Each slot takes at least ten bytes: a bound before allocating for the count.
    if count > rest.len() / 10 {
        return Err(truncated());
    }
    let mut slots = Vec::with_capacity(count);
    for _ in 0..count {
        let hash = u64::from_le_bytes(
            take(&mut rest, 8)
                .ok_or_else(truncated)?
                .try_into()
                .expect("8 bytes"),
        );
        let len = u16::from_le_bytes(
            take(&mut rest, 2)
                .ok_or_else(truncated)?
                .try_into()
                .expect("2 bytes"),
        );
        let id = std::str::from_utf8(take(&mut rest, len.into()).ok_or_else(truncated)?)
            .map_err(|_| "has a slot whose ID is not UTF-8".to_string())?;
        slots.push(Slot {
            id: id.to_owned(),
            hash,
        });
    }
    let graph = match take(&mut rest, 1).ok_or_else(truncated)? {
        [0] => None,
        [1] => {
            let graph = Hnsw::decode(header.params(), &mut rest)
                .ok_or_else(|| "has a damaged graph".to_string())?;
            if graph.len() != count {
                return Err("has a graph of another size than its slots".into());
            }
            Some(graph)
        }
        _ => return Err("has an unknown graph flag".into()),
    };
    let mapped = match header.mapped_dim() {
        Some(dim) => {
            let at = |rest: &[u8]| body.len() - rest.len();
            let size = |per: usize| count.checked_mul(per).ok_or_else(truncated);
            let codes_at = at(rest).next_multiple_of(ALIGN);
            rest = body.get(codes_at..).ok_or_else(truncated)?;
            take(&mut rest, size(dim + 4)?).ok_or_else(truncated)?;
            let vectors_at = at(rest).next_multiple_of(ALIGN);
            rest = body.get(vectors_at..).ok_or_else(truncated)?;
            take(&mut rest, size(4 * dim)?).ok_or_else(truncated)?;
            Some(MappedRows {
                file: map.clone(),
                at: (codes_at, vectors_at),
            })
        }
        None => None,
    };
    let carried = header.carried_dim().map_or(0, |dim| dim * count);
    if carried == 0 && !rest.is_empty() {
        return Err("has bytes after its graph".into());
    }
    if rest.len() != 4 * carried {
        return Err("has vectors of another size than its slots".into());
    }
    let vectors = rest
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
        .collect();
    Ok(Loaded {
        header,
        slots,
        graph,
        vectors,
        mapped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BuiltinEmbedder, Embedder, VectorIndex};

    fn sample(n: usize) -> (Header, Vec<Slot>, VectorIndex) {
        let e = BuiltinEmbedder::with_dim(8).unwrap();
        let mut index = VectorIndex::new(8);
        for i in 0..n {
            index.add(
                &e.embed(&format!("lesson {i} about topic {}", i % 7))
                    .unwrap(),
            );
        }
        index.build_graph();
        let state = EmbedderState {
            base: e.id(),
            fitted: e.id(),
            fit_docs: n,
        };
        let header = Header {
            revision: 42,
            state,
            statuses: vec![LessonStatus::Approved],
            params: index.params(),
            dim: 8,
            slots: n,
        };
        let slots = (0..n)
            .map(|i| Slot {
                id: if i % 5 == 0 {
                    String::new()
                } else {
                    format!("L-{i}")
                },
                hash: i as u64 * 31,
            })
            .collect();
        (header, slots, index)
    }

    #[cfg(unix)]
    #[test]
    fn a_link_to_a_device_or_a_folder_is_refused_without_reading_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lore.recall");
        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        let Err(why) = read::<Header>(&path) else {
            panic!("a device is refused")
        };
        assert!(why.contains("not a regular file"), "{why}");
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        let Err(why) = read::<Header>(&path) else {
            panic!("a folder is refused")
        };
        assert!(why.contains("not a regular file"), "{why}");
    }

    #[test]
    fn a_written_file_reads_back_the_same_and_any_damage_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index").join("lore.recall");
        assert!(read::<Header>(&path).unwrap().is_none(), "no file yet");
        let (header, slots, index) = sample(300);
        write_mapped(&path, &header, &slots, index.graph(), index.rows()).unwrap();
        let loaded = read::<Header>(&path).unwrap().unwrap();
        assert_eq!(loaded.header, header);
        assert_eq!(loaded.slots, slots);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        index.graph().unwrap().encode(&mut a);
        loaded.graph.unwrap().encode(&mut b);
        assert_eq!(a, b, "the graph's links round-trip");

        let bytes = std::fs::read(&path).unwrap();
        for cut in [0, 5, 12, bytes.len() / 2, bytes.len() - 1] {
            std::fs::write(&path, &bytes[..cut]).unwrap();
            assert!(
                read::<Header>(&path).is_err(),
                "truncated at {cut} is refused"
            );
        }
        for at in [3, 20, bytes.len() / 3, bytes.len() - 2] {
            let mut bad = bytes.clone();
            bad[at] ^= 0x40;
            std::fs::write(&path, &bad).unwrap();
            assert!(
                read::<Header>(&path).is_err(),
                "a flipped byte at {at} is refused"
            );
        }
        let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn a_graph_whose_links_leave_it_is_refused_even_with_a_good_checksum() {
        let (header, _, index) = sample(50);
        let mut graph = Vec::new();
        index.graph().unwrap().encode(&mut graph);
        // The first node's first layer-0 link, just after the 20-byte preamble and its length.
        graph[22..26].copy_from_slice(&1000u32.to_le_bytes());
        let mut rest = graph.as_slice();
        assert!(Hnsw::decode(header.params, &mut rest).is_none());
    }

    #[test]
    fn concurrent_writers_leave_a_whole_file_for_every_reader() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lore.recall");
        let (header, slots, index) = sample(400);
        write_mapped(&path, &header, &slots, index.graph(), index.rows()).unwrap();
        std::thread::scope(|s| {
            for w in 0..3u64 {
                let (path, slots, index) = (&path, &slots, &index);
                let header = Header {
                    revision: w,
                    ..header.clone()
                };
                s.spawn(move || {
                    for _ in 0..20 {
                        write_mapped(path, &header, slots, index.graph(), index.rows()).unwrap();
                    }
                });
            }
            s.spawn(|| {
                for _ in 0..60 {
                    let loaded = read::<Header>(&path)
                        .expect("never a half-written file")
                        .unwrap();
                    assert_eq!(loaded.slots.len(), 400);
                }
            });
        });
    }

    /// Another kind of index, carrying its vectors.
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Carrying {
        slots: usize,
        params: HnswParams,
        dim: usize,
    }

    impl Format for Carrying {
        const MAGIC: &'static [u8; 8] = b"TEST-CIX";
        const VERSION: u32 = 3;

        fn slots(&self) -> usize {
            self.slots
        }

        fn params(&self) -> HnswParams {
            self.params
        }

        fn carried_dim(&self) -> Option<usize> {
            Some(self.dim)
        }
    }

    #[test]
    fn carried_vectors_round_trip_and_another_kind_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lore.other");
        let (header, slots, index) = sample(300);
        let carrying = Carrying {
            slots: slots.len(),
            params: header.params,
            dim: 8,
        };
        let vectors: Vec<f32> = (0..slots.len() as u32)
            .flat_map(|s| index.vector(s).to_vec())
            .collect();
        assert!(
            write_carrying(&path, &carrying, &slots, index.graph(), &vectors[8..]).is_err(),
            "vectors that do not fill the slots are refused"
        );
        write_carrying(&path, &carrying, &slots, index.graph(), &vectors).unwrap();
        let loaded = read::<Carrying>(&path).unwrap().unwrap();
        assert_eq!(loaded.header, carrying);
        assert_eq!(loaded.slots, slots);
        assert_eq!(loaded.vectors, vectors);
        assert!(read::<Header>(&path).is_err(), "another kind's file");
        write_mapped(
            &dir.path().join("lore.recall"),
            &header,
            &slots,
            index.graph(),
            index.rows(),
        )
        .unwrap();
        assert!(read::<Carrying>(&dir.path().join("lore.recall")).is_err());
    }

    #[test]
    fn rows_are_read_in_place_as_written_and_a_removed_slot_keeps_no_vector() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lore.recall");
        let (header, slots, mut index) = sample(300);
        let removed: Vec<u32> = (0..300).filter(|i| i % 5 == 0).collect();
        for &slot in &removed {
            index.remove(slot);
        }
        write_mapped(&path, &header, &slots, index.graph(), index.rows()).unwrap();
        let loaded = read::<Header>(&path).unwrap().unwrap();
        let rows = loaded.mapped.expect("the rows are laid out");
        assert_eq!(rows.at.0 % ALIGN, 0, "codes aligned");
        assert_eq!(rows.at.1 % ALIGN, 0, "vectors aligned");
        let live: Vec<bool> = (0..300).map(|i| i % 5 != 0).collect();
        let mapped =
            VectorIndex::restore_mapped(8, index.params(), &rows.file, rows.at, live, loaded.graph)
                .unwrap();
        let memory = mapped.memory();
        assert_eq!(memory.mapped, 300 * (8 + 4 + 4 * 8));
        assert!(memory.vectors + memory.codes < 300 * 2, "{memory:?}");
        for slot in 0..300u32 {
            if removed.contains(&slot) {
                assert!(mapped.vector(slot).iter().all(|x| *x == 0.0), "{slot}");
            } else {
                assert_eq!(mapped.vector(slot), index.vector(slot), "{slot}");
            }
        }
        for q in [3u32, 41, 299] {
            let query = index.vector(q).to_vec();
            assert_eq!(
                mapped.exact(&query, 10, |_| true),
                index.exact(&query, 10, |_| true)
            );
        }
        let short = VectorIndex::restore_mapped(
            8,
            index.params(),
            &rows.file,
            rows.at,
            vec![true; 301],
            None,
        );
        assert!(short.is_none(), "more slots than the file holds");
    }
}
