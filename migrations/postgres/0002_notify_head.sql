-- Every append moves the head row; tell listening replicas the new head when it commits, so they
-- catch up in the background (reads still confirm the head themselves: a notice may come late).
CREATE FUNCTION op_log_notify_head() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('chronoscope_log', NEW.last_seq::text);
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER op_log_head_moved
    AFTER UPDATE OF last_seq ON op_log_head
    FOR EACH ROW EXECUTE FUNCTION op_log_notify_head();
