//! Small generated Zeek TSV `conn` logs with a unique `uid` per event, and the checks of what
//! `weir export --to json` gives back for them.

/// The header of the generated logs.
pub fn header() -> String {
    "#separator \\x09\n#set_separator\t,\n#empty_field\t(empty)\n#unset_field\t-\n#path\tconn\n\
     #fields\tts\tuid\tid.orig_h\tid.orig_p\tid.resp_h\tid.resp_p\tproto\tn\tnames\n\
     #types\ttime\tstring\taddr\tport\taddr\tport\tenum\tcount\tvector[string]\n"
        .to_string()
}

/// The unique uid of event `i`.
pub fn uid(i: u64) -> String {
    format!("C{i:010}")
}

/// One event line whose every field is derived from `i`, so a corrupted event is noticed.
pub fn row(i: u64) -> String {
    format!(
        "{}.{:06}\t{}\t10.{}.{}.{}\t{}\t2001:db8::{:x}\t{}\ttcp\t{}\ta{},b c,{}\n",
        1_600_000_000 + i / 1000,
        (i % 1000) * 1000,
        uid(i),
        (i >> 16) & 255,
        (i >> 8) & 255,
        i & 255,
        i % 65536,
        i & 0xffff,
        (i * 7) % 65536,
        i * 3,
        i,
        i % 13
    )
}

/// A complete log of events `range`.
pub fn log(range: std::ops::Range<u64>) -> String {
    let mut out = header();
    for i in range {
        out.push_str(&row(i));
    }
    out
}

/// The JSON object `weir export --to json` should print for event `i` (as a check of values).
pub fn check_event(i: u64, obj: &serde_json::Value) {
    assert_eq!(obj["uid"], serde_json::json!(uid(i)), "{obj}");
    assert_eq!(obj["n"], serde_json::json!(i * 3), "{obj}");
    assert_eq!(obj["id.orig_p"], serde_json::json!(i % 65536), "{obj}");
    assert_eq!(
        obj["names"],
        serde_json::json!([format!("a{i}"), "b c", (i % 13).to_string()]),
        "{obj}"
    );
}

/// The event numbers (from the uids) of parsed exported events.
pub fn numbers(events: &[serde_json::Value]) -> Vec<u64> {
    events
        .iter()
        .map(|e| {
            let u = e["uid"].as_str().unwrap_or_else(|| panic!("no uid: {e}"));
            u[1..].parse().unwrap_or_else(|_| panic!("bad uid {u}"))
        })
        .collect()
}
