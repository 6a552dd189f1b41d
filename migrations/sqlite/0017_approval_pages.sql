-- Activity after a year of use: approvals are listed a page at a time by (created_at, id),
-- newest first, with filters on status, tool, surface and time, and a search over the card's
-- text. Each filter has its index; the search has a trigram full-text index (FTS5).

-- The card's searchable text (title, action, item lines, request; lowercased), written with the
-- row and immutable like the card it comes from. Rows written before this migration get it here
-- (a card that does not parse gets none: it is never shown as a match).
ALTER TABLE approvals ADD COLUMN card_text TEXT NOT NULL DEFAULT '';
UPDATE approvals SET card_text = CASE WHEN json_valid(card) THEN lower(
       coalesce(json_extract(card, '$.title'), '') || char(10)
    || coalesce(json_extract(card, '$.action'), '') || char(10)
    || coalesce((SELECT group_concat(value, char(10)) FROM json_each(approvals.card, '$.lines')), '')
    || char(10) || coalesce(json_extract(card, '$.request'), ''))
  ELSE '' END;

CREATE TRIGGER approvals_immutable_card_text BEFORE UPDATE OF card_text ON approvals
WHEN NEW.card_text IS NOT OLD.card_text
BEGIN SELECT RAISE(ABORT, 'approval request terms are immutable (DESIGN §2): card_text'); END;

DROP INDEX IF EXISTS approvals_status_created;
CREATE INDEX approvals_created_id ON approvals (created_at, id);
CREATE INDEX approvals_status_created_id ON approvals (status, created_at, id);
CREATE INDEX approvals_tool_created_id ON approvals (tool, created_at, id);
CREATE INDEX approvals_surface_created_id ON approvals (surface, created_at, id);

-- Rows are never deleted and card_text never changes, so the index only follows inserts.
CREATE VIRTUAL TABLE approvals_search USING fts5(
    card_text, content = 'approvals', content_rowid = 'rowid', tokenize = 'trigram'
);
INSERT INTO approvals_search (approvals_search) VALUES ('rebuild');
CREATE TRIGGER approvals_search_on_insert AFTER INSERT ON approvals
BEGIN INSERT INTO approvals_search (rowid, card_text) VALUES (NEW.rowid, NEW.card_text); END;
