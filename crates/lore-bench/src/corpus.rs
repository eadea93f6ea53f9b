//! A benchmark's embedded corpus, kept on disk between runs (`lore bench recall --vectors`).
//!
//! A model embeds a million lessons in over an hour on two cores, the graph over them in a
//! couple of minutes: comparing graphs, efforts or builds at that size should not pay for the
//! embedding every time. A file holds one embedder's vectors of one corpus, named by the
//! embedder's identity (which carries its fit) and a hash of the texts, so that another
//! embedder, another fit or other texts never read it. Vectors are appended batch by batch as
//! they are made, so a run stopped midway (a crash, a machine turned off) resumes where it got.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};
use lore_recall::{Embedder, text_hash};

const MAGIC: &[u8; 8] = b"LOREVEC1";
const HEADER: usize = MAGIC.len() + 4;

/// The corpus's vectors, and how many of them an earlier run had made.
pub(crate) struct Embedded {
    pub(crate) vectors: Vec<Vec<f32>>,
    pub(crate) from_disk: usize,
}

/// Embeds `texts` in batches of `batch`, keeping them in a file under `keep` when given (and
/// starting from what it already holds); `progress` is told how many are done after each batch.
pub(crate) fn embed(
    embedder: &dyn Embedder,
    texts: &[&str],
    batch: usize,
    keep: Option<&Path>,
    mut progress: impl FnMut(usize),
) -> Result<Embedded> {
    let dim = embedder.id().dim;
    let mut vectors = Vec::with_capacity(texts.len());
    let mut file = match keep {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("creating the vectors folder {}", dir.display()))?;
            let path = dir.join(file_name(embedder, texts));
            vectors = read(&path, dim, texts.len())?;
            Some(open_for_append(&path, dim, vectors.len())?)
        }
        None => None,
    };
    let from_disk = vectors.len();
    for chunk in texts[from_disk..].chunks(batch.max(1)) {
        let made = embedder.embed_batch(chunk)?;
        ensure!(
            made.len() == chunk.len() && made.iter().all(|v| v.len() == dim),
            "the embedder returned {} vectors for {} texts, or vectors not of {dim} components",
            made.len(),
            chunk.len()
        );
        if let Some((f, path)) = &mut file {
            let mut bytes = Vec::with_capacity(4 * dim * made.len());
            for v in &made {
                bytes.extend(v.iter().flat_map(|x| x.to_le_bytes()));
            }
            f.write_all(&bytes)
                .and_then(|()| f.flush())
                .with_context(|| format!("writing {}", path.display()))?;
        }
        vectors.extend(made);
        progress(vectors.len());
    }
    Ok(Embedded { vectors, from_disk })
}

/// `{embedder}-{texts}-{hash of the texts}.vec`, the embedder's identity kept to file-name
/// characters.
fn file_name(embedder: &dyn Embedder, texts: &[&str]) -> String {
    let id: String = embedder
        .id()
        .to_string()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let hash = texts.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, t| {
        h.rotate_left(7) ^ text_hash(t)
    });
    format!("{id}-{}-{hash:016x}.vec", texts.len())
}

/// The whole vectors a file holds (a torn last one is left out), none when there is no file.
fn read(path: &Path, dim: usize, most: usize) -> Result<Vec<Vec<f32>>> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    ensure!(
        bytes.len() >= HEADER
            && &bytes[..MAGIC.len()] == MAGIC
            && bytes[MAGIC.len()..HEADER] == (dim as u32).to_le_bytes(),
        "{} is not a file of {dim}-component vectors; remove it to embed again",
        path.display()
    );
    Ok(bytes[HEADER..]
        .chunks_exact(4 * dim)
        .take(most)
        .map(|v| {
            v.chunks_exact(4)
                .map(|x| f32::from_le_bytes([x[0], x[1], x[2], x[3]]))
                .collect()
        })
        .collect())
}

/// The file opened to append after its first `kept` vectors (anything after them, such as a
/// torn vector, is cut), made with its header when new.
fn open_for_append(path: &Path, dim: usize, kept: usize) -> Result<(std::fs::File, PathBuf)> {
    let context = || format!("opening {}", path.display());
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
        .with_context(context)?;
    if kept == 0 {
        f.set_len(0).with_context(context)?;
        f.write_all(MAGIC).with_context(context)?;
        f.write_all(&(dim as u32).to_le_bytes())
            .with_context(context)?;
    } else {
        f.set_len((HEADER + 4 * dim * kept) as u64)
            .with_context(context)?;
    }
    use std::io::Seek;
    f.seek(std::io::SeekFrom::End(0)).with_context(context)?;
    Ok((f, path.to_path_buf()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lore_recall::BuiltinEmbedder;

    fn texts(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| format!("lesson {i} about the lake and the mountains"))
            .collect()
    }

    #[test]
    fn a_kept_corpus_is_read_back_and_a_torn_run_resumes() {
        let dir = tempfile::tempdir().unwrap();
        let owned = texts(50);
        let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
        let e = BuiltinEmbedder::default().fitted(refs.iter().copied());
        let fresh = embed(&e, &refs, 8, None, |_| {}).unwrap();
        assert_eq!(fresh.from_disk, 0);
        let first = embed(&e, &refs, 8, Some(dir.path()), |_| {}).unwrap();
        assert_eq!((first.from_disk, first.vectors.len()), (0, 50));
        assert_eq!(first.vectors, fresh.vectors);
        let again = embed(&e, &refs, 8, Some(dir.path()), |_| {
            panic!("nothing to embed")
        })
        .unwrap();
        assert_eq!(again.from_disk, 50);
        assert_eq!(again.vectors, fresh.vectors);

        // A run stopped midway: 20 whole vectors and half of the next.
        let path = dir.path().join(file_name(&e, &refs));
        let dim = e.id().dim;
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len((HEADER + 4 * dim * 20 + 2 * dim) as u64).unwrap();
        drop(f);
        let mut done = Vec::new();
        let resumed = embed(&e, &refs, 8, Some(dir.path()), |n| done.push(n)).unwrap();
        assert_eq!(resumed.from_disk, 20);
        assert_eq!(done, [28, 36, 44, 50]);
        assert_eq!(resumed.vectors, fresh.vectors);
        let whole = std::fs::metadata(&path).unwrap().len();
        assert_eq!(whole, (HEADER + 4 * dim * 50) as u64);
    }

    #[test]
    fn other_texts_or_another_fit_never_read_a_kept_corpus() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (texts(30), texts(31));
        let ra: Vec<&str> = a.iter().map(String::as_str).collect();
        let rb: Vec<&str> = b.iter().map(String::as_str).collect();
        let ea = BuiltinEmbedder::default().fitted(ra.iter().copied());
        embed(&ea, &ra, 16, Some(dir.path()), |_| {}).unwrap();
        let other_texts = embed(&ea, &rb, 16, Some(dir.path()), |_| {}).unwrap();
        assert_eq!(other_texts.from_disk, 0);
        let eb = BuiltinEmbedder::default().fitted(rb.iter().copied());
        let other_fit = embed(&eb, &ra, 16, Some(dir.path()), |_| {}).unwrap();
        assert_eq!(other_fit.from_disk, 0);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
    }

    #[test]
    fn a_file_of_another_dimension_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let owned = texts(5);
        let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
        let e = BuiltinEmbedder::default().fitted(refs.iter().copied());
        let path = dir.path().join(file_name(&e, &refs));
        std::fs::write(&path, b"LOREVEC1\x03\x00\x00\x00").unwrap();
        let err = embed(&e, &refs, 4, Some(dir.path()), |_| {}).err().unwrap();
        assert!(
            err.to_string().contains("remove it to embed again"),
            "{err}"
        );
        assert_eq!(
            std::fs::read(&path).unwrap().len(),
            HEADER,
            "left as it was"
        );
    }
}
