//! What the server last said in an ERROR reply, kept so that a later error that ends the
//! conversation — a timeout, the server's death — still carries it.
//!
//! An ERROR reply is not fatal (the conversation goes on, [`Error::Remote`]); a server that
//! fails once may well hang or die on the next request, and the reason it gave the first time
//! is then the best clue the user has. [`LastWords::attach`] appends it to the error that
//! ends the conversation, where that error has text to append to.

use crate::error::Error;

/// The server's most recent ERROR reply: its seq and its message.
#[derive(Debug, Default)]
pub(super) struct LastWords(Option<(u64, String)>);

impl LastWords {
    /// Remembers `error` when it is the server's ERROR reply.
    pub(super) fn heard(&mut self, error: &Error) {
        if let Error::Remote { seq, message } = error {
            self.0 = Some((*seq, message.clone()));
        }
    }

    /// `error` with the server's last ERROR appended after what a [`Error::Timeout`] waited
    /// for or after the context of [`Error::PeerExited`]; other errors, and every error when
    /// the server never answered ERROR, are returned as they are.
    pub(super) fn attach(&self, error: Error) -> Error {
        let Some((seq, message)) = &self.0 else { return error };
        let said = format!("; the server's last ERROR, for seq {seq}, said: {message}");
        match error {
            Error::Timeout { waiting_for, after } => {
                Error::Timeout { waiting_for: waiting_for + &said, after }
            }
            Error::PeerExited { status, context, code, signal } => {
                Error::PeerExited { status, context: context + &said, code, signal }
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_timeout_or_a_death_after_an_error_reply_carries_the_servers_words() {
        let mut words = LastWords::default();
        let timeout = || Error::Timeout {
            waiting_for: "waiting for the reply to seq 2".into(),
            after: Duration::from_secs(1),
        };
        assert_eq!(words.attach(timeout()).to_string(), timeout().to_string());
        words.heard(&Error::PeerClosed { context: "before replying" });
        assert_eq!(words.attach(timeout()).to_string(), timeout().to_string());
        words.heard(&Error::Remote { seq: 1, message: "handler failed: out of cheese".into() });
        assert_eq!(
            words.attach(timeout()).to_string(),
            "timed out after 1s waiting for the reply to seq 2; the server's last ERROR, for \
             seq 1, said: handler failed: out of cheese"
        );
        let died = Error::PeerExited {
            status: "exited with status 3".into(),
            context: "while waiting for the reply to seq 2".into(),
            code: Some(3),
            signal: None,
        };
        match words.attach(died) {
            Error::PeerExited { context, code: Some(3), .. } => {
                assert!(context.ends_with("said: handler failed: out of cheese"), "{context}")
            }
            other => panic!("expected PeerExited, got {other:?}"),
        }
        let closed = words.attach(Error::PeerClosed { context: "before replying" });
        assert!(matches!(closed, Error::PeerClosed { .. }), "{closed}");
    }
}
