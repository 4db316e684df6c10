//! The archive's line format (one row of `audit.events` as one JSON Lines line). A line has
//! many spellings of one row (field order, whitespace, escapes), so the contract is on the row:
//! whatever parses is written back as a line that reads as the same row and leaf index, and
//! that line is written the same again.

use event_audit::test_support::archive::line::{parse_line, write_line};

/// An archive line: parsing never panics; a row read is written back and read again as the same
/// row; a refusal is one short sentence (it names the field, never quotes the line).
pub fn archive_line(data: &[u8]) -> bool {
    let row = match parse_line(data) {
        Ok(row) => row,
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.len() < 200, "a long refusal: {msg}");
            return false;
        }
    };
    let mut again = Vec::new();
    write_line(&row.view(), row.leaf_index(), &mut again);
    let back = parse_line(&again).expect("a written line reads back");
    assert_eq!(back.view(), row.view(), "a line read back as another row");
    assert_eq!(back.leaf_index(), row.leaf_index());
    let mut third = Vec::new();
    write_line(&back.view(), back.leaf_index(), &mut third);
    assert_eq!(third, again, "a row written twice as two lines");
    true
}
