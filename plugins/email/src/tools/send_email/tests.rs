use super::address::{in_request, parse_address};
use super::normalise::re_subject;

#[test]
fn request_match_is_whole_address() {
    assert!(in_request(
        "Write to Anna@Example.org please",
        "anna@example.org"
    ));
    assert!(in_request("write to anna@example.org.", "anna@example.org"));
    assert!(in_request("<anna@example.org>", "anna@example.org"));
    assert!(!in_request(
        "write to banna@example.org",
        "anna@example.org"
    ));
    assert!(!in_request(
        "write to anna@example.org.uk",
        "anna@example.org"
    ));
    assert!(!in_request(
        "write to anna@example.orgs",
        "anna@example.org"
    ));
    assert!(!in_request("", "anna@example.org"));
}

#[test]
fn addresses_parse_and_lower() {
    assert_eq!(
        parse_address(" Anna@Example.org ").unwrap(),
        "anna@example.org"
    );
    assert_eq!(
        parse_address("Anna Weber <anna@example.org>").unwrap(),
        "anna@example.org"
    );
    assert!(parse_address("not an address").is_err());
    assert!(parse_address("a@").is_err());
    assert!(parse_address("").is_err());
}

#[test]
fn re_is_not_doubled() {
    assert_eq!(re_subject("Dinner"), "Re: Dinner");
    assert_eq!(re_subject("RE: Dinner"), "RE: Dinner");
    assert_eq!(re_subject("Re: Dinner"), "Re: Dinner");
}
