//! Hashline anchors: show the model `LINE#HH|code`, accept edits that name
//! those anchors, and refuse them once the file changed under the model.
//!
//! Run: `cargo run -p coderig --example hashline_stale_refs`

use coderig::hashline::{self, HashlineEdit, Lines};
use coderig::EditError;

fn main() {
    let file = "import os\n\ndef main():\n    print('hi')\n";
    let shown = hashline::format(file);
    println!("what the model sees:\n{shown}");

    // The model answers with the anchor of line 4 as it saw it.
    let anchor = shown
        .lines()
        .nth(3)
        .unwrap()
        .split('|')
        .next()
        .unwrap()
        .to_string();
    let edit = HashlineEdit::Replace {
        pos: anchor.clone(),
        end: None,
        lines: Lines::Many(vec!["    print('hello')".into()]),
    };
    let updated = hashline::apply(file, std::slice::from_ref(&edit)).unwrap();
    println!("applied:\n{updated}");

    // Meanwhile someone else changed line 4: the same edit is now stale.
    let changed = "import os\n\ndef main():\n    print('bye')\n";
    match hashline::apply(changed, &[edit]) {
        Err(EditError::HashlineMismatch { message, remaps }) => {
            println!("refused as stale:\n{message}");
            println!("fresh refs: {remaps:?}");
            assert_eq!(remaps.len(), 1);
        }
        other => panic!("expected a stale-ref refusal, got {other:?}"),
    }
}
