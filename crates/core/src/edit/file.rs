//! OWNER: edit-engine helper (edit_file, edits_file, hashline_edit_file, write_atomic).
