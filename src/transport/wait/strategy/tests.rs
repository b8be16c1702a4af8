use super::*;

#[test]
fn the_default_wait_is_auto_and_every_name_parses_back() {
    let us = Duration::from_micros(1);
    assert_eq!(Wait::default(), Wait::Auto { move_thread: false });
    let moving = Wait::Auto { move_thread: true };
    for wait in [
        Wait::auto(),
        moving,
        Wait::Block,
        Wait::Spin,
        Wait::hybrid(),
        Wait::Hybrid { spin: 7 * us },
    ] {
        assert_eq!(wait.to_string().parse::<Wait>().unwrap(), wait, "{wait}");
    }
    let error = "sleepy".parse::<Wait>().unwrap_err().to_string();
    assert!(error.contains("auto, auto:move, block, spin, hybrid"), "{error}");
    assert_eq!((moving.name(), moving.to_string()), ("auto", "auto:move".to_string()));
}
