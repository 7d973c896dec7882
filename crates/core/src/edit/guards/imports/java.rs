//! Java and Kotlin imports: `import a.b.C;`, `import static a.B.m;`,
//! `import a.b.*`, Kotlin's `import a.b.C as D` (one statement per line, `;`
//! optional).

use super::{
    alias, any_window_line, bound, is_dotted_path, is_ident, is_import_path, strip_line_comment,
    Binding, Scan, Window,
};

/// Adds the import keys of every `import` line of `content` to `s`.
pub(super) fn imports(content: &str, s: &mut Scan) {
    for (n, line) in content.lines().enumerate() {
        let t = strip_line_comment(line, "//").trim();
        let Some(rest) = t.strip_prefix("import ") else {
            continue;
        };
        for stmt in rest.split(';') {
            let stmt = stmt.trim().strip_prefix("import ").unwrap_or(stmt.trim());
            let words: Vec<&str> = stmt.split_whitespace().collect();
            let key = match words.as_slice() {
                ["static", path] if is_import_path(path) => format!("import static {path}"),
                [path] if is_import_path(path) => format!("import {path}"),
                [path, "as", alias] if is_dotted_path(path) && is_ident(alias) => {
                    format!("import {path} as {alias}")
                }
                _ => continue,
            };
            s.keys.insert(key);
            s.mark(n..n + 1);
        }
    }
}

/// Whether an edit whose changed lines are `windows` may have removed an
/// import key (see [`super::may_drop`]): each line's keys depend on that
/// line alone, so only a removed `import` line can lose one.
pub(super) fn may_lose_keys(original: &str, windows: &[Window]) -> bool {
    any_window_line(
        original,
        windows,
        |w| w.old.clone(),
        |line| strip_line_comment(line, "//").trim().starts_with("import "),
    )
}

/// The names a Java key binds: the alias, else the last segment (a class, or
/// a static member); a `.*` import binds no name that can be checked.
pub(super) fn binding(key: &str) -> Binding {
    let rest = key.strip_prefix("import ").unwrap_or(key);
    let rest = rest.strip_prefix("static ").unwrap_or(rest);
    if rest.ends_with('*') {
        return Binding::Opaque;
    }
    match alias(rest) {
        Some(a) => bound([a.as_str()]),
        None => bound([rest.rsplit('.').next().unwrap_or(rest)]),
    }
}

/// The star import of the class or package `key` imports from (`import a.b.C`
/// → `import a.b.*`).
pub(super) fn covering_glob(plain: &str) -> Option<String> {
    let (parent, _) = plain.strip_prefix("import ")?.rsplit_once('.')?;
    Some(format!("import {parent}.*"))
}

#[cfg(test)]
mod tests {
    use super::super::Lang;

    fn keys(s: &str) -> Vec<String> {
        Lang::Java.imports(s).into_iter().collect()
    }

    #[test]
    fn java_forms() {
        assert_eq!(
            keys("import java.util.List;\nimport static org.junit.Assert.*;\nimport a.b.C as D\n"),
            vec![
                "import a.b.C as D",
                "import java.util.List",
                "import static org.junit.Assert.*"
            ]
        );
    }
}
