"""The Python twin of examples/edit_drifted_model.rs: apply a drifted edit
when its target is certain, refuse an ambiguous one with a useful message.

Run (with the module installed): python examples/edit_drifted_model.py
"""
import coderig

# The file uses tabs and curly quotes; the model re-typed the block with four
# spaces and straight quotes.
file = "fn greet(name: &str) {\n\tlet msg = format!(\u201chi {}\u201d, name);\n\tprintln!(\u201c{}\u201d, msg);\n}\n"
old = '    let msg = format!("hi {}", name);\n    println!("{}", msg);'
new = '    let msg = format!("hello {}", name);\n    println!("{}", msg);'

m = coderig.locate(file, old)
print("located:", m.kind, "at", (m.start, m.end))
r = coderig.apply_edit(file, old, new)
print("applied at tier", r.tier)
print(r.content)
assert "\tlet msg = format!(\u201chello {}\u201d, name);" in r.content

try:
    coderig.apply_edit("retry();\nwait();\nretry();\n", "retry();", "retry_later();")
    raise SystemExit("an ambiguous edit must be refused")
except coderig.AmbiguousError as e:
    print("refused (%s): %s" % (e.code, e))
    assert e.code == "AMBIGUOUS"
