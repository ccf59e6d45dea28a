//! What a Dockerfile's final stage says about the image at run time: the files copied in, the
//! user, the workdir, the entrypoint and the cmd. Enough of the Dockerfile grammar for that
//! (comments, `\` continuations, instruction keywords in any case, exec-form JSON arrays); a
//! shell-form `ENTRYPOINT`/`CMD` is kept as one string, which never equals an exec form.

/// The runtime settings of the last `FROM` stage.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FinalStage {
    /// The stage's base image.
    pub base: String,
    /// Every `COPY` of the stage as (its arguments but the last, destination).
    pub copies: Vec<(Vec<String>, String)>,
    /// `USER`, if set.
    pub user: Option<String>,
    /// `WORKDIR`, if set.
    pub workdir: Option<String>,
    /// `ENTRYPOINT`, if set.
    pub entrypoint: Option<Vec<String>>,
    /// `CMD`, if set.
    pub cmd: Option<Vec<String>>,
}

/// Why a Dockerfile could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DockerfileError {
    /// No `FROM` at all.
    #[error("the Dockerfile has no FROM")]
    NoStage,
    /// An instruction with arguments this reader does not understand.
    #[error("Dockerfile line {line}: {instruction}: {why}")]
    Bad {
        /// The 1-based line the instruction starts on.
        line: usize,
        /// The instruction.
        instruction: String,
        /// What is wrong.
        why: String,
    },
}

/// The final stage of `text`.
pub fn final_stage(text: &str) -> Result<FinalStage, DockerfileError> {
    let mut stage: Option<FinalStage> = None;
    for (line, instruction, args) in instructions(text) {
        let bad = |why: String| DockerfileError::Bad {
            line,
            instruction: instruction.clone(),
            why,
        };
        if instruction == "FROM" {
            stage = Some(FinalStage {
                base: args.split_whitespace().next().unwrap_or_default().into(),
                ..FinalStage::default()
            });
            continue;
        }
        let Some(stage) = stage.as_mut() else {
            continue; // ARG / syntax before the first FROM
        };
        match instruction.as_str() {
            "COPY" => {
                let mut words: Vec<String> = args.split_whitespace().map(String::from).collect();
                let dest = words
                    .pop()
                    .filter(|_| !words.is_empty())
                    .ok_or_else(|| bad("needs a source and a destination".into()))?;
                stage.copies.push((words, dest));
            }
            "USER" => stage.user = Some(args.trim().into()),
            "WORKDIR" => stage.workdir = Some(args.trim().into()),
            "ENTRYPOINT" => stage.entrypoint = Some(exec_form(&args).map_err(bad)?),
            "CMD" => stage.cmd = Some(exec_form(&args).map_err(bad)?),
            _ => {}
        }
    }
    stage.ok_or(DockerfileError::NoStage)
}

/// A JSON array of strings, or the shell form as one string.
fn exec_form(args: &str) -> Result<Vec<String>, String> {
    let args = args.trim();
    if args.starts_with('[') {
        serde_json::from_str(args).map_err(|e| format!("not a JSON array of strings: {e}"))
    } else {
        Ok(vec![args.to_string()])
    }
}

/// (line, upper-case instruction, arguments) of every instruction, continuations joined.
fn instructions(text: &str) -> Vec<(usize, String, String)> {
    let mut out = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (index, raw) in text.lines().enumerate() {
        let trimmed = raw.trim();
        if trimmed.starts_with('#') || (trimmed.is_empty() && pending.is_none()) {
            continue;
        }
        let (start, mut joined) = pending.take().unwrap_or((index + 1, String::new()));
        match trimmed.strip_suffix('\\') {
            Some(part) => {
                joined.push_str(part);
                joined.push(' ');
                pending = Some((start, joined));
            }
            None => {
                joined.push_str(trimmed);
                let (word, rest) = joined
                    .split_once(char::is_whitespace)
                    .unwrap_or((&joined, ""));
                out.push((start, word.to_ascii_uppercase(), rest.trim().to_string()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_stage_wins_and_continuations_and_comments_are_read() {
        let text = "# syntax=docker/dockerfile:1\nFROM rust AS build\nUSER root\nRUN a \\\n  && b\n\
                    from base:1\n# note\ncopy --from=build /out/app \\\n  /usr/bin/app\nUSER 1:1\n\
                    WORKDIR /w\nENTRYPOINT [\"/usr/bin/app\"]\nCMD run now\n";
        assert_eq!(
            final_stage(text).unwrap(),
            FinalStage {
                base: "base:1".into(),
                copies: vec![(
                    vec!["--from=build".into(), "/out/app".into()],
                    "/usr/bin/app".into()
                )],
                user: Some("1:1".into()),
                workdir: Some("/w".into()),
                entrypoint: Some(vec!["/usr/bin/app".into()]),
                cmd: Some(vec!["run now".into()]),
            }
        );
    }

    #[test]
    fn a_broken_exec_form_names_its_line() {
        let error = final_stage("FROM x\n\nENTRYPOINT [\"/a\"\n").unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("Dockerfile line 3: ENTRYPOINT: not a JSON array"),
            "{error}"
        );
        assert_eq!(final_stage("ARG X=1\n"), Err(DockerfileError::NoStage));
    }
}
