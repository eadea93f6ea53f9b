//! Skills on disk: `skills/{domain}/{skill}/SKILL.md` and the files around it.
//!
//! The layout is seed 000's, so existing skill folders work unchanged. `WORKSPACE.md` and
//! `DOMAIN.md` are found by walking up from the skill's folder, but never above the project root,
//! so a stray file elsewhere on the machine never leaks into a prompt. Only `SKILL.md` is
//! required.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use lore_core::error::{Error, Result};
use lore_core::scope::SkillPath;

/// One layer file found on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
}

/// The files that make up one skill's prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillFiles {
    /// Layer 0, organisation-wide policies.
    pub workspace: Option<LayerFile>,
    /// Layer 1, the domain's identity and voice.
    pub domain: Option<LayerFile>,
    /// Layer 3, the task itself (front matter removed).
    pub skill: LayerFile,
}

/// Where a guardrail bullet went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GuardrailWrite {
    /// Appended to this file.
    Appended(PathBuf),
    /// Not written: the skill has no folder under `skills/`.
    NoSkillFolder(PathBuf),
}

/// The `skills/` folder of a project.
#[derive(Clone, Debug)]
pub struct SkillLibrary {
    root: PathBuf,
    boundary: PathBuf,
}

impl SkillLibrary {
    /// A library rooted at `skills_root`; layer files are looked for up to `project_root`.
    pub fn new(skills_root: impl Into<PathBuf>, project_root: impl Into<PathBuf>) -> Self {
        let root = skills_root.into();
        let project_root = project_root.into();
        let boundary = if root.starts_with(&project_root) {
            project_root
        } else {
            root.clone()
        };
        Self { root, boundary }
    }

    /// The `skills/` folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Refuses `path` when it, or a folder on the way to it, is a link that leads out of the
    /// skills folder (or to nothing, where a write would create the link's target wherever it
    /// points). What Lore writes under `skills/` is the agent's corrections: through a
    /// `GUARDRAILS.md` or a skill folder linked elsewhere, they would land in any file the
    /// process can write.
    ///
    /// # Errors
    /// [`Error::Forbidden`] naming the path; [`Error::Io`] when a path cannot be inspected.
    pub fn confined(&self, path: &Path) -> Result<()> {
        let root = match fs::canonicalize(&self.root) {
            Ok(root) => root,
            // Nothing under a folder yet to be made can be a link.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Error::io(&self.root, e)),
        };
        let mut probe = path.to_path_buf();
        loop {
            match fs::symlink_metadata(&probe) {
                Ok(_) => {
                    let leaves =
                        fs::canonicalize(&probe).map_or(true, |real| !real.starts_with(&root));
                    if leaves {
                        return Err(Error::Forbidden(format!(
                            "{} is a link that leads out of the skills folder {}; Lore writes \
                             only inside it",
                            probe.display(),
                            self.root.display()
                        )));
                    }
                    return Ok(());
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    if !probe.pop() {
                        return Ok(());
                    }
                }
                Err(e) => return Err(Error::io(&probe, e)),
            }
        }
    }

    /// The folder of one skill.
    pub fn skill_dir(&self, skill: &SkillPath) -> PathBuf {
        self.root.join(skill.domain()).join(skill.name())
    }

    /// Reads the layer files of `skill`.
    ///
    /// # Errors
    /// [`Error::NotFound`] when `SKILL.md` is missing, [`Error::Io`] when a file cannot be read.
    pub fn load(&self, skill: &SkillPath) -> Result<SkillFiles> {
        let dir = self.skill_dir(skill);
        let skill_md = dir.join("SKILL.md");
        if !skill_md.is_file() {
            // Relative to the project: the message reaches REST and MCP callers, who have no
            // business learning where the server keeps its files.
            let shown = skill_md.strip_prefix(&self.boundary).unwrap_or(
                skill_md
                    .strip_prefix(&self.root)
                    .unwrap_or(Path::new("SKILL.md")),
            );
            return Err(Error::not_found(
                "skill",
                format!("{skill} (no SKILL.md at {})", shown.display()),
            ));
        }
        let mut skill_file = read(&skill_md)?;
        skill_file.text = strip_front_matter(&skill_file.text).to_owned();
        Ok(SkillFiles {
            workspace: self.find_up(&dir, "WORKSPACE.md")?,
            domain: self.find_up(&dir, "DOMAIN.md")?,
            skill: skill_file,
        })
    }

    fn find_up(&self, start: &Path, name: &str) -> Result<Option<LayerFile>> {
        let mut dir = Some(start);
        while let Some(d) = dir {
            let candidate = d.join(name);
            if candidate.is_file() {
                return read(&candidate).map(Some);
            }
            if d == self.boundary || !d.starts_with(&self.boundary) {
                break;
            }
            dir = d.parent();
        }
        Ok(None)
    }

    /// Appends one bullet to the skill's `GUARDRAILS.md`, creating the file with a header. The
    /// file is committed with the skill, so whatever the detector flags in the bullet is redacted
    /// first, whatever the caller checked.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be written.
    pub fn append_guardrail(&self, skill: &SkillPath, bullet: &str) -> Result<GuardrailWrite> {
        let dir = self.skill_dir(skill);
        if !dir.is_dir() {
            return Ok(GuardrailWrite::NoSkillFolder(dir));
        }
        let path = dir.join("GUARDRAILS.md");
        self.confined(&path)?;
        let fresh = !path.exists();
        let mut file = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        let mut text = String::new();
        if fresh {
            text.push_str(&format!(
                "# Guardrails for {skill}\n\nAnti-patterns learned from corrections, appended by Lore.\n\n"
            ));
        }
        text.push_str(lore_core::sensitive::redact(bullet).trim_end());
        text.push('\n');
        file.write_all(text.as_bytes())
            .map_err(|e| Error::io(&path, e))?;
        Ok(GuardrailWrite::Appended(path))
    }

    /// Writes an example skill (and a `WORKSPACE.md`) unless the files already exist.
    ///
    /// # Errors
    /// [`Error::Io`] when a file cannot be written.
    pub fn write_example(&self, skill: &SkillPath) -> Result<Vec<PathBuf>> {
        let dir = self.skill_dir(skill);
        let files = [
            (self.root.join("WORKSPACE.md"), EXAMPLE_WORKSPACE.to_owned()),
            (
                self.root.join(skill.domain()).join("DOMAIN.md"),
                format!("# Domain: {}\n\n{EXAMPLE_DOMAIN}", skill.domain()),
            ),
            (
                dir.join("SKILL.md"),
                EXAMPLE_SKILL.replace("{skill}", skill.as_str()),
            ),
        ];
        let mut written = Vec::new();
        for (path, text) in files {
            if path.exists() {
                continue;
            }
            self.confined(&path)?;
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
            }
            fs::write(&path, text).map_err(|e| Error::io(&path, e))?;
            written.push(path);
        }
        Ok(written)
    }
}

fn read(path: &Path) -> Result<LayerFile> {
    let text = fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    Ok(LayerFile {
        path: path.to_owned(),
        text,
    })
}

/// Drops a leading `---` … `---` block (YAML front matter), which configures the skill rather
/// than instructing the model.
pub fn strip_front_matter(text: &str) -> &str {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return text;
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        offset += line.len();
        if line.trim_end() == "---" {
            return rest[offset..].trim_start_matches(['\n', '\r']);
        }
    }
    text
}

const EXAMPLE_WORKSPACE: &str = "# Workspace policies\n\n\
- Never include personal data (emails, phone numbers) in an answer unless the input gave it.\n\
- Say when you are unsure instead of guessing.\n";

const EXAMPLE_DOMAIN: &str =
    "Answers in this domain are short, concrete and written for a busy reader.\n";

const EXAMPLE_SKILL: &str = "---\nname: {skill}\ndescription: Summarize a support ticket.\n---\n\
# Skill: {skill}\n\n\
Summarize the support ticket given as input in at most three sentences. Return JSON:\n\
`{\"summary\": string, \"priority\": \"low\" | \"normal\" | \"urgent\"}`.\n";

#[cfg(test)]
mod tests {
    use super::*;

    fn lib(dir: &Path) -> SkillLibrary {
        SkillLibrary::new(dir.join("skills"), dir)
    }

    #[test]
    fn missing_skill_md_is_a_clear_error() {
        let tmp = tempfile::tempdir().unwrap();
        let err = lib(tmp.path())
            .load(&SkillPath::parse("hr/none").unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no SKILL.md at skills/hr/none/SKILL.md"),
            "{err}"
        );
        let root = tmp.path().to_string_lossy();
        assert!(
            !err.contains(root.as_ref()),
            "the project's path leaks: {err}"
        );
    }

    #[test]
    fn layers_are_found_by_walking_up_and_optional_ones_skipped() {
        let tmp = tempfile::tempdir().unwrap();
        let library = lib(tmp.path());
        let skill = SkillPath::parse("hr/screen").unwrap();
        fs::create_dir_all(library.skill_dir(&skill)).unwrap();
        fs::write(
            library.skill_dir(&skill).join("SKILL.md"),
            "---\na: b\n---\nDo it.\n",
        )
        .unwrap();
        let files = library.load(&skill).unwrap();
        assert_eq!(files.skill.text, "Do it.\n");
        assert!(files.workspace.is_none() && files.domain.is_none());

        fs::write(tmp.path().join("WORKSPACE.md"), "policy").unwrap();
        fs::write(library.root().join("hr").join("DOMAIN.md"), "hr voice").unwrap();
        let files = library.load(&skill).unwrap();
        assert_eq!(files.workspace.unwrap().text, "policy");
        assert_eq!(files.domain.unwrap().text, "hr voice");
    }

    #[test]
    fn files_above_the_project_root_are_ignored() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("WORKSPACE.md"), "outside").unwrap();
        let project = tmp.path().join("project");
        let library = lib(&project);
        let skill = SkillPath::parse("hr/screen").unwrap();
        library.write_example(&skill).unwrap();
        fs::remove_file(library.root().join("WORKSPACE.md")).unwrap();
        assert!(library.load(&skill).unwrap().workspace.is_none());
    }

    #[test]
    fn guardrails_never_hold_a_secret() {
        let tmp = tempfile::tempdir().unwrap();
        let library = SkillLibrary::new(tmp.path().join("skills"), tmp.path());
        let skill = SkillPath::parse("support/triage").unwrap();
        std::fs::create_dir_all(library.skill_dir(&skill)).unwrap();
        let GuardrailWrite::Appended(path) = library
            .append_guardrail(
                &skill,
                "- Avoid: mailing jane@example.com the key sk-live_0123456789abcdefgh",
            )
            .unwrap()
        else {
            panic!("expected an append");
        };
        let text = std::fs::read_to_string(path).unwrap();
        assert!(
            !text.contains("jane@example.com") && !text.contains("sk-live"),
            "{text}"
        );
        assert!(text.contains("[redacted:email]"), "{text}");
    }

    #[test]
    fn guardrails_get_a_header_once_and_bullets_appended() {
        let tmp = tempfile::tempdir().unwrap();
        let library = lib(tmp.path());
        let skill = SkillPath::parse("hr/screen").unwrap();
        assert!(matches!(
            library.append_guardrail(&skill, "- x").unwrap(),
            GuardrailWrite::NoSkillFolder(_)
        ));
        library.write_example(&skill).unwrap();
        library.append_guardrail(&skill, "- first").unwrap();
        let GuardrailWrite::Appended(path) = library.append_guardrail(&skill, "- second").unwrap()
        else {
            panic!("expected an append");
        };
        let text = fs::read_to_string(path).unwrap();
        assert_eq!(text.matches("# Guardrails").count(), 1);
        assert!(text.ends_with("- first\n- second\n"), "{text}");
    }
}
