-- IRIS approvals: the undo button's words for what is left on a card, for PostgreSQL
-- (docs/liveness.md "undo that"). Same rule as migrations/sqlite/0029_undo_left.sql.
--
-- * `approvals.undo_left`: written when an undo from the chat acted on some of an executed
--   card's items (each noted in the audit log): the card's own undo then restores the rest,
--   and its button says so ("Restore 3 emails"), not the execution's count. NULL until then.
ALTER TABLE approvals ADD COLUMN undo_left TEXT;
