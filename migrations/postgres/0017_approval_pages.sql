-- Activity after a year of use: approvals are listed a page at a time by (created_at, id),
-- newest first, with filters on status, tool, surface and time, and a search over the card's
-- text. Each filter has its index; the search has a trigram index (pg_trgm, a trusted
-- extension: the database's owner may create it).

-- The card's searchable text (title, action, item lines, request; lowercased), written with the
-- row and immutable like the card it comes from. Rows written before this migration get it here
-- (a card that does not parse gets none: it is never shown as a match).
ALTER TABLE approvals ADD COLUMN card_text TEXT NOT NULL DEFAULT '';

CREATE FUNCTION iris_card_text_0017(card text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    j jsonb;
BEGIN
    j := card::jsonb;
    RETURN lower(concat_ws(E'\n', j->>'title', j->>'action',
        (SELECT string_agg(v, E'\n') FROM jsonb_array_elements_text(
            CASE WHEN jsonb_typeof(j->'lines') = 'array' THEN j->'lines' ELSE '[]'::jsonb END) v),
        j->>'request'));
EXCEPTION WHEN others THEN
    RETURN '';
END $$;
UPDATE approvals SET card_text = iris_card_text_0017(card);
DROP FUNCTION iris_card_text_0017(text);

CREATE TRIGGER approvals_immutable_card_text BEFORE UPDATE OF card_text ON approvals FOR EACH ROW
WHEN (NEW.card_text IS DISTINCT FROM OLD.card_text)
EXECUTE FUNCTION iris_refuse('approval request terms are immutable (DESIGN §2): card_text');

DROP INDEX IF EXISTS approvals_status_created;
CREATE INDEX approvals_created_id ON approvals (created_at, id);
CREATE INDEX approvals_status_created_id ON approvals (status, created_at, id);
CREATE INDEX approvals_tool_created_id ON approvals (tool, created_at, id);
CREATE INDEX approvals_surface_created_id ON approvals (surface, created_at, id);

CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX approvals_card_text_trgm ON approvals USING gin (card_text gin_trgm_ops);
