//! What a harness does with a model's search/replace edit: apply it when the
//! target is certain (even if the model drifted), refuse with a message the
//! model can act on when it is not.
//!
//! Run: `cargo run -p coderig --example edit_drifted_model`

use coderig::{apply_edit, locate, Edit, EditError};

fn main() {
    // The file uses tabs and curly quotes; the model re-typed the block with
    // four spaces and straight quotes.
    let file = "fn greet(name: &str) {\n\tlet msg = format!(\u{201c}hi {}\u{201d}, name);\n\tprintln!(\u{201c}{}\u{201d}, msg);\n}\n";
    let edit = Edit {
        old: "    let msg = format!(\"hi {}\", name);\n    println!(\"{}\", msg);".into(),
        new: "    let msg = format!(\"hello {}\", name);\n    println!(\"{}\", msg);".into(),
        replace_all: false,
    };
    let m = locate(file, &edit.old);
    println!("located at tier {:?}, span {:?}", m.kind, m.span);
    let applied = apply_edit(file, &edit).expect("the drifted edit is certain");
    println!(
        "applied at tier {}:\n{}",
        applied.tier.as_str(),
        applied.content
    );
    // The file keeps its tabs and its curly quotes.
    assert!(applied
        .content
        .contains("\tlet msg = format!(\u{201c}hello {}\u{201d}, name);"));

    // A repetitive file: the same line twice. coderig refuses instead of
    // picking the first one, and says where the candidates are.
    let repetitive = "retry();\nwait();\nretry();\n";
    let err = apply_edit(
        repetitive,
        &Edit {
            old: "retry();".into(),
            new: "retry_later();".into(),
            replace_all: false,
        },
    )
    .unwrap_err();
    assert!(matches!(err, EditError::Ambiguous { count: 2, .. }));
    println!("\nrefused ({}): {}", err.code(), err);
}
