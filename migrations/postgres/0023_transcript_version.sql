-- IRIS approvals: a version on each conversation's transcript, for PostgreSQL (DESIGN §8 "nothing is
-- lost"). Same rule as migrations/sqlite/0023_transcript_version.sql.
--
-- A run reads the transcript and its version, and its commit writes the transcript only where
-- the version is still the one it read, making it one more; a commit that finds another run's
-- messages landed first writes nothing, and its writer applies its own change (the result it
-- placed, the messages it appended) to the transcript as it is now and commits again. Rows
-- written before this migration start at version 1.
ALTER TABLE conversations ADD COLUMN version BIGINT NOT NULL DEFAULT 1;
