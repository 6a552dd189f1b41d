-- A unit of work's compare-and-set is checked where it runs (crates/store/src/unit.rs): by its
-- count of changed rows on SQLite, whose writer now runs each statement as it comes, and by its
-- `RETURNING` on PostgreSQL. The assertion table of 0016, which a SQLite batch broke to stop
-- itself, is no longer written by anything.
DROP TABLE unit_assertions;
