//! The data an inline button carries back (`callback_data`, at most 64 bytes): the step and
//! the approval id, `STEP:UUID`, nothing else. The decision is never taken from anything but
//! the step, and the call that runs is always the one the row pins (DESIGN §3 step 7), so a
//! forged button can at most name a step for a row; every part is validated strictly and
//! anything else is refused before the store is touched.

use std::fmt;

/// What a tap asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The action button ("Trash 3 emails"): show the confirm view ("…? Yes / Cancel").
    Ask,
    /// Yes in the confirm view: approve.
    Yes,
    /// Cancel in the confirm view: back to the card; nothing is decided.
    Cancel,
    /// Reject on the card: one tap, rejects.
    Reject,
}

impl Step {
    /// The one-letter code in `callback_data`.
    fn code(self) -> char {
        match self {
            Step::Ask => 'a',
            Step::Yes => 'y',
            Step::Cancel => 'c',
            Step::Reject => 'r',
        }
    }
}

/// A parsed, valid `callback_data`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallbackData {
    /// The step.
    pub step: Step,
    /// The approval id (lower-case hyphenated UUID, as the queue writes it).
    pub approval_id: String,
}

/// Why a `callback_data` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallbackDataError {
    /// No data at all (a game button, or a client that sent none).
    #[error("the button carried no data")]
    Missing,
    /// Not `STEP:UUID` with a known step and a canonical UUID.
    #[error("the button's data is not one IRIS made")]
    Malformed,
}

impl CallbackData {
    /// `STEP:UUID`, e.g. `a:0f8e2f4e-5b7c-4c1e-9a47-3c1f7d2b9e10` (38 bytes, under Telegram's 64).
    pub fn encode(&self) -> String {
        format!("{}:{}", self.step.code(), self.approval_id)
    }

    /// Parses `data`: exactly one known step letter, a colon and a canonical (lower-case,
    /// hyphenated) UUID.
    ///
    /// # Errors
    /// [`CallbackDataError::Missing`] for no data, [`CallbackDataError::Malformed`] otherwise.
    pub fn parse(data: Option<&str>) -> Result<CallbackData, CallbackDataError> {
        let data = data.ok_or(CallbackDataError::Missing)?;
        let (step, id) = data.split_once(':').ok_or(CallbackDataError::Malformed)?;
        let step = match step {
            "a" => Step::Ask,
            "y" => Step::Yes,
            "c" => Step::Cancel,
            "r" => Step::Reject,
            _ => return Err(CallbackDataError::Malformed),
        };
        let canonical = uuid::Uuid::try_parse(id)
            .map_err(|_| CallbackDataError::Malformed)?
            .hyphenated()
            .to_string();
        if canonical != id {
            return Err(CallbackDataError::Malformed);
        }
        Ok(CallbackData {
            step,
            approval_id: canonical,
        })
    }
}

impl fmt::Display for CallbackData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.encode())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0f8e2f4e-5b7c-4c1e-9a47-3c1f7d2b9e10";

    #[test]
    fn round_trips_every_step() {
        for step in [Step::Ask, Step::Yes, Step::Cancel, Step::Reject] {
            let data = CallbackData {
                step,
                approval_id: ID.into(),
            };
            let text = data.encode();
            assert!(text.len() <= 64);
            assert_eq!(CallbackData::parse(Some(&text)), Ok(data));
        }
    }

    #[test]
    fn refuses_anything_it_did_not_make() {
        assert_eq!(CallbackData::parse(None), Err(CallbackDataError::Missing));
        for bad in [
            "",
            "a",
            "a:",
            ID,
            &format!("x:{ID}"),
            &format!("approve:{ID}"),
            &format!("A:{ID}"),
            &format!("a:{}", ID.to_uppercase()),
            &format!("a:{}", ID.replace('-', "")),
            &format!("a:{{{ID}}}"),
            &format!("a:urn:uuid:{ID}"),
            &format!("a:{ID}:extra"),
            &format!("a: {ID}"),
            &format!("y:{ID}\n"),
            "y:../../governance",
        ] {
            assert_eq!(
                CallbackData::parse(Some(bad)),
                Err(CallbackDataError::Malformed),
                "{bad:?}"
            );
        }
    }
}
