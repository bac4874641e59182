package projection

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
)

// Progress reports how far a rebuild is; total is 0 while unknown.
type Progress func(stage string, done, total int64)

// RebuildRedis copies every order status record from PostgreSQL into Redis,
// for example after Redis lost its data. Until it ran, the API serves those
// orders from PostgreSQL. It returns the number of records written.
func RebuildRedis(ctx context.Context, pool *pgxpool.Pool, rdb *redis.Client, progress Progress) (int64, error) {
	return rebuildRedis(ctx, pool, rdb, Live.Orders, progress)
}

func rebuildRedis(ctx context.Context, pool *pgxpool.Pool, rdb *redis.Client, table string, progress Progress) (int64, error) {
	var total int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&total); err != nil {
		return 0, err
	}
	var done int64
	progress("redis", 0, total)
	var lastProject, lastOrder = "00000000-0000-0000-0000-000000000000", ""
	for {
		rows, err := pool.Query(ctx, `SELECT project_id::text, order_no, rev, status, fulfillment_status, invoices, waiting_for,
				waiting_for_all, holds, payment
			FROM `+table+` WHERE (project_id, order_no) > ($1::uuid, $2) ORDER BY project_id, order_no LIMIT 2000`, lastProject, lastOrder)
		if err != nil {
			return done, err
		}
		chunk, err := pgx.CollectRows(rows, scanStatus)
		if err != nil {
			return done, err
		}
		if len(chunk) == 0 {
			return done, nil
		}
		if err := putRedis(ctx, rdb, chunk); err != nil {
			return done, fmt.Errorf("redis: %w", err)
		}
		done += int64(len(chunk))
		progress("redis", done, total)
		last := chunk[len(chunk)-1].ref
		lastProject, lastOrder = last.projectID, last.orderNo
	}
}

// partitionEnd is how far a replay has read one partition.
type partitionEnd struct {
	topic     string
	partition int
	next      int64 // the next offset to read
}

// RebuildFromEvents reconstructs both read models from the event topics,
// read from their earliest offsets, while the API keeps serving the current
// tables: it fills fresh tables, then, holding the lock that pauses the live
// projectors, reads what arrived meanwhile, swaps the tables in and finally
// refreshes Redis. Listing cursors issued before the rebuild become invalid
// positions (invoice sequence numbers are assigned anew).
func (p *Projector) RebuildFromEvents(ctx context.Context, progress Progress) error {
	live := p.tables
	fresh := Tables{Orders: live.Orders + "_rebuild", Invoices: live.Invoices + "_rebuild"}
	for _, stmt := range []string{
		`DROP TABLE IF EXISTS ` + fresh.Orders + `, ` + fresh.Invoices,
		`CREATE TABLE ` + fresh.Orders + ` (LIKE ` + live.Orders + ` INCLUDING ALL)`,
		`CREATE TABLE ` + fresh.Invoices + ` (LIKE ` + live.Invoices + ` INCLUDING ALL)`,
	} {
		if _, err := p.pool.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("prepare tables: %w", err)
		}
	}
	replay := p.WithSource(p.topics, p.group, fresh)
	replay.shadow = true
	ends, err := p.partitions(ctx)
	if err != nil {
		return err
	}
	if err := replay.readUpToEnd(ctx, ends, progress); err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(lockKey)); err != nil {
			return err
		}
		if err := replay.readUpToEnd(ctx, ends, progress); err != nil {
			return err
		}
		for _, stmt := range []string{
			`ALTER TABLE ` + live.Orders + ` RENAME TO ` + live.Orders + `_old`,
			`ALTER TABLE ` + fresh.Orders + ` RENAME TO ` + live.Orders,
			`ALTER TABLE ` + live.Invoices + ` RENAME TO ` + live.Invoices + `_old`,
			`ALTER TABLE ` + fresh.Invoices + ` RENAME TO ` + live.Invoices,
			`DROP TABLE ` + live.Orders + `_old, ` + live.Invoices + `_old`,
		} {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("swap tables: %w", err)
	}
	_, err = rebuildRedis(ctx, p.pool, p.rdb, live.Orders, progress)
	return err
}

// partitions lists every partition of the projected topics, to be read from its first offset.
func (p *Projector) partitions(ctx context.Context) ([]*partitionEnd, error) {
	conn, err := dialAny(ctx, p.brokers)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	parts, err := conn.ReadPartitions(p.topics...)
	if err != nil {
		return nil, fmt.Errorf("kafka: partitions: %w", err)
	}
	var out []*partitionEnd
	for _, pt := range parts {
		out = append(out, &partitionEnd{topic: pt.Topic, partition: pt.ID, next: -1})
	}
	return out, nil
}

func dialAny(ctx context.Context, brokers []string) (*kafka.Conn, error) {
	var last error
	for _, b := range brokers {
		conn, err := (&kafka.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", b)
		if err == nil {
			return conn, nil
		}
		last = err
	}
	return nil, fmt.Errorf("kafka: %w", last)
}

// readUpToEnd applies, for every partition, the events from where the last
// call stopped (the first offset at the start) to the partition's current end.
func (p *Projector) readUpToEnd(ctx context.Context, ends []*partitionEnd, progress Progress) error {
	type span struct {
		pe          *partitionEnd
		first, last int64
	}
	var spans []span
	var total int64
	for _, pe := range ends {
		first, last, err := p.offsets(ctx, pe.topic, pe.partition)
		if err != nil {
			return err
		}
		if pe.next < 0 {
			pe.next = first
		}
		if pe.next < first { // retention removed events we had not read
			pe.next = first
		}
		spans = append(spans, span{pe, pe.next, last})
		total += last - pe.next
	}
	var done int64
	progress("events", 0, total)
	for _, sp := range spans {
		if sp.first >= sp.last {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: p.brokers, Topic: sp.pe.topic, Partition: sp.pe.partition,
			MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 100 * time.Millisecond})
		if err := r.SetOffset(sp.first); err != nil {
			r.Close()
			return err
		}
		for sp.pe.next < sp.last {
			batch := make([]kafka.Message, 0, MaxBatch)
			for len(batch) < MaxBatch && sp.pe.next+int64(len(batch)) < sp.last {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					r.Close()
					return fmt.Errorf("kafka: read %s/%d: %w", sp.pe.topic, sp.pe.partition, err)
				}
				batch = append(batch, m)
				if m.Offset+1 >= sp.last {
					break
				}
			}
			if err := p.Apply(ctx, batch); err != nil {
				r.Close()
				return err
			}
			sp.pe.next = batch[len(batch)-1].Offset + 1
			done += int64(len(batch))
			progress("events", done, total)
		}
		r.Close()
	}
	return nil
}

// offsets returns the first and the end (next to be written) offset of a partition.
func (p *Projector) offsets(ctx context.Context, topic string, partition int) (int64, int64, error) {
	var last error
	for _, b := range p.brokers {
		conn, err := (&kafka.Dialer{Timeout: 5 * time.Second}).DialLeader(ctx, "tcp", b, topic, partition)
		if err != nil {
			last = err
			continue
		}
		first, end, err := conn.ReadOffsets()
		conn.Close()
		return first, end, err
	}
	if last == nil {
		last = errors.New("no brokers")
	}
	return 0, 0, fmt.Errorf("kafka: offsets of %s/%d: %w", topic, partition, last)
}

// RebuildRedisInto copies p's order table into p's Redis.
func (p *Projector) RebuildRedisInto(ctx context.Context, progress Progress) error {
	if progress == nil {
		progress = func(string, int64, int64) {}
	}
	_, err := rebuildRedis(ctx, p.pool, p.rdb, p.tables.Orders, progress)
	return err
}
