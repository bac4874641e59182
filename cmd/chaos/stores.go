package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log"
	"net/mail"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// stores reads what the run left in PostgreSQL, the archive bucket and the
// SMTP sink, for the checks the API does not show: one object version per
// document part, one Message-ID per e-mail.
type stores struct {
	pool      *pgxpool.Pool
	s3        *minio.Client
	bucket    string
	projectID string
}

func openStores(ctx context.Context, c config, projectID string) (*stores, error) {
	dbURL := os.Getenv("O2I_DATABASE_URL")
	if dbURL == "" {
		return nil, errors.New("O2I_DATABASE_URL is not set: load .dev/env")
	}
	pc, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, fmt.Errorf("O2I_DATABASE_URL: %w", err)
	}
	pc.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, err
	}
	tls, _ := strconv.ParseBool(os.Getenv("O2I_S3_USE_TLS"))
	s3, err := minio.New(os.Getenv("O2I_S3_ENDPOINT"), &minio.Options{
		Creds:  credentials.NewStaticV4(os.Getenv("O2I_S3_ACCESS_KEY"), os.Getenv("O2I_S3_SECRET_KEY"), ""),
		Secure: tls,
	})
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("O2I_S3_ENDPOINT: %w", err)
	}
	// The run's project is live: its documents go to the locked bucket.
	return &stores{pool: pool, s3: s3, bucket: os.Getenv("O2I_S3_BUCKET"), projectID: projectID}, nil
}

func (s *stores) close() { s.pool.Close() }

// waitMailed waits until the project has no pending e-mail delivery, or
// until deadline; it returns how many are still pending.
func (s *stores) waitMailed(ctx context.Context, deadline time.Time) (int, error) {
	for {
		var n int
		err := s.pool.QueryRow(ctx, `SELECT count(*) FROM mail_deliveries WHERE project_id = $1 AND status = 'pending'`, s.projectID).Scan(&n)
		if err == nil && n == 0 {
			return 0, nil
		}
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		if time.Now().After(deadline) {
			if err != nil {
				return 0, err
			}
			return n, nil
		}
		sleep(ctx, 2*time.Second)
	}
}

// check reads the documents, their deliveries and anchors, the bucket's
// versions and the sink's messages, and reconciles them into rep.
func (s *stores) check(ctx context.Context, rep *report, listed []invoice, mailDir string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT i.id::text, i.number, COALESCE(md.status, ''), COALESCE(md.message_id, ''),
       COALESCE(md.recipient, ''), COALESCE(md.attempts, 0)
  FROM invoices i LEFT JOIN mail_deliveries md ON md.invoice_id = i.id
 WHERE i.project_id = $1 ORDER BY i.number`, s.projectID)
	if err != nil {
		return nil, fmt.Errorf("read deliveries: %w", err)
	}
	var ds []delivery
	var ids []string
	for rows.Next() {
		var d delivery
		if err := rows.Scan(&d.InvoiceID, &d.Number, &d.Status, &d.MessageID, &d.Recipient, &d.Attempts); err != nil {
			rows.Close()
			return nil, err
		}
		ds = append(ds, d)
		ids = append(ids, d.InvoiceID)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var problems []string
	if len(ds) != len(listed) {
		problems = append(problems, fmt.Sprintf("PostgreSQL holds %d documents of the project, the API lists %d", len(ds), len(listed)))
	}

	rows, err = s.pool.Query(ctx, `SELECT invoice_id::text, kind, bucket, object_key, version_id, COALESCE(embedded_in, ''), byte_offset IS NOT NULL
		FROM archive_objects WHERE project_id = $1`, s.projectID)
	if err != nil {
		return nil, fmt.Errorf("read anchors: %w", err)
	}
	var anchors []anchor
	for rows.Next() {
		var a anchor
		if err := rows.Scan(&a.InvoiceID, &a.Kind, &a.Bucket, &a.Key, &a.VersionID, &a.EmbeddedIn, &a.InBatch); err != nil {
			rows.Close()
			return nil, err
		}
		anchors = append(anchors, a)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var versions []objectVersion
	for o := range s.s3.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.projectID + "/", Recursive: true, WithVersions: true}) {
		if o.Err != nil {
			return nil, fmt.Errorf("list bucket %s: %w", s.bucket, o.Err)
		}
		versions = append(versions, objectVersion{Key: o.Key, VersionID: o.VersionID, DeleteMarker: o.IsDeleteMarker})
	}
	af, p := reconcileArchive(s.bucket, s.projectID, ids, anchors, versions)
	rep.Archive = af
	problems = append(problems, p...)

	msgs, err := sinkMessages(mailDir, strings.ToLower(fmt.Sprintf("CHAOS-%s-", s.projectID[:8])))
	if err != nil {
		return nil, err
	}
	mf, p := reconcileMail(ds, msgs)
	rep.Mail = mf
	problems = append(problems, p...)
	log.Printf("stores: %d documents, %d object versions, %d messages at the sink", len(ds), len(versions), len(msgs))
	return problems, nil
}

// sinkMessages reads the headers of the sink's messages whose recipient
// starts with prefix (the run's orders).
func sinkMessages(dir, prefix string) ([]sinkMessage, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.eml"))
	if err != nil {
		return nil, err
	}
	var out []sinkMessage
	for _, file := range files {
		m, err := readSinkHeader(file)
		if err != nil {
			return nil, err
		}
		if strings.HasPrefix(strings.ToLower(m.To), prefix) {
			out = append(out, m)
		}
	}
	return out, nil
}

func readSinkHeader(file string) (sinkMessage, error) {
	f, err := os.Open(file)
	if err != nil {
		return sinkMessage{}, err
	}
	defer f.Close()
	msg, err := mail.ReadMessage(bufio.NewReader(f))
	if err != nil {
		return sinkMessage{}, fmt.Errorf("%s: %w", file, err)
	}
	m := sinkMessage{File: filepath.Base(file), MessageID: strings.Trim(strings.TrimSpace(msg.Header.Get("Message-Id")), "<>")}
	if a, err := mail.ParseAddress(msg.Header.Get("To")); err == nil {
		m.To = a.Address
	} else {
		m.To = msg.Header.Get("To")
	}
	return m, nil
}
