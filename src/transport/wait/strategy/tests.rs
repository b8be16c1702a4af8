use super::*;

#[test]
fn the_default_wait_is_auto_and_every_name_parses_back() {
    let us = Duration::from_micros(1);
    assert_eq!(Wait::default(), Wait::Auto { move_thread: true });
    let staying = Wait::Auto { move_thread: false };
    for wait in [
        Wait::auto(),
        staying,
        Wait::Block,
        Wait::Spin,
        Wait::hybrid(),
        Wait::Hybrid { spin: 7 * us },
    ] {
        assert_eq!(wait.to_string().parse::<Wait>().unwrap(), wait, "{wait}");
    }
    let error = "sleepy".parse::<Wait>().unwrap_err().to_string();
    assert!(error.contains("auto, auto:stay, block, spin, hybrid"), "{error}");
    assert_eq!((staying.name(), staying.to_string()), ("auto", "auto:stay".to_string()));
}
