-- docker-compose: runs once, when the postgres container initialises its volume.
-- The schema registry keeps its artifacts (and so the schema ids) in their own database.
CREATE DATABASE registry;
