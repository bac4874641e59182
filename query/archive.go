package query

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/httpx"
)

// The auditor's view of the archive: the listing (GET /v1/archive), the
// verification (o2i archive verify) and the tax-audit export (GET
// /v1/archive/export, o2i archive export). All three read the anchor in
// PostgreSQL and the objects by version id; none writes anything.

// archivedInvoice is one manifest row with the anchors of its objects.
type archivedInvoice struct {
	seq                    int64
	invoiceID, number, typ string
	numberSeq              int64  // the number's position in its range (invoices.seq)
	format                 string // zugferd, xrechnung or small_amount (a PDF only)
	issueDate              time.Time
	rangeKey               string
	chainSeq               int64
	testMode               bool
	manifestSHA, prevSHA   string // prevSHA "" for the first of a range
	objects                map[string]anchored
}

type anchored struct {
	bucket     string
	st         archive.Stored
	embeddedIn string // "pdf": an XML kept only inside the PDF (st names the PDF's object)
}

// archiveScope selects manifests: of a project, of the year (0: every
// year), live or test ones (both: testMode nil), up to seq upto (0: no bound).
type archiveScope struct {
	projectID string
	year      int
	testMode  *bool
	upto      int64
}

// archivedInvoices returns the stored manifests in scope with their
// objects, after seq, at most limit, in seq order.
func (s *Service) archivedInvoices(ctx context.Context, sc archiveScope, after int64, limit int) ([]archivedInvoice, error) {
	rows, err := s.pool.Query(ctx, `SELECT m.seq, m.invoice_id::text, m.number, m.type, m.issue_date, m.range_key, m.chain_seq, m.test_mode, m.sha256,
			COALESCE(m.prev_sha256, ''), COALESCE(i.format, ''), COALESCE(i.seq, 0)
		FROM archive_manifests m LEFT JOIN invoices i ON i.id = m.invoice_id
		WHERE m.project_id = $1 AND ($2 = 0 OR m.year = $2) AND ($3::boolean IS NULL OR m.test_mode = $3) AND m.seq > $4
		AND ($6 = 0 OR m.seq <= $6) AND m.stored_at IS NOT NULL
		ORDER BY m.seq LIMIT $5`, sc.projectID, sc.year, sc.testMode, after, limit, sc.upto)
	if err != nil {
		return nil, err
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (archivedInvoice, error) {
		var a archivedInvoice
		err := r.Scan(&a.seq, &a.invoiceID, &a.number, &a.typ, &a.issueDate, &a.rangeKey, &a.chainSeq, &a.testMode, &a.manifestSHA, &a.prevSHA, &a.format, &a.numberSeq)
		a.objects = map[string]anchored{}
		return a, err
	})
	if err != nil || len(list) == 0 {
		return list, err
	}
	ids := make([]string, len(list))
	at := make(map[string]int, len(list))
	for i, a := range list {
		ids[i], at[a.invoiceID] = a.invoiceID, i
	}
	rows, err = s.pool.Query(ctx, `SELECT invoice_id::text, kind, bucket, object_key, version_id, sha256, size, retain_until,
			COALESCE(embedded_in, ''), byte_offset
		FROM archive_objects WHERE invoice_id = ANY($1::uuid[])`, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, kind string
		var o anchored
		var until *time.Time
		var offset *int64
		if err := rows.Scan(&id, &kind, &o.bucket, &o.st.Key, &o.st.VersionID, &o.st.SHA256, &o.st.Size, &until, &o.embeddedIn, &offset); err != nil {
			return nil, err
		}
		if until != nil {
			u := until.UTC()
			until = &u
		}
		o.st.Anchored(until, offset)
		list[at[id]].objects[kind] = o
	}
	return list, rows.Err()
}

// archiveBatch is how many invoices verify and export read at once.
const archiveBatch = 200

// objectTimeout bounds the reading of one archived object (the largest are
// PDFs of a few hundred kilobytes).
const objectTimeout = time.Minute

// eachArchived calls f with the manifests in scope, batch by batch, and
// returns how many there were. The scope is bounded to the manifests stored
// when it starts (sc.upto), so that two walks see the same invoices.
func (s *Service) eachArchived(ctx context.Context, sc archiveScope, f func([]archivedInvoice) error) error {
	var after int64
	for {
		list, err := s.archivedInvoices(ctx, sc, after, archiveBatch)
		if err != nil || len(list) == 0 {
			return err
		}
		if err := f(list); err != nil {
			return err
		}
		after = list[len(list)-1].seq
	}
}

// boundScope fixes sc.upto at the newest stored manifest and counts the
// manifests in scope.
func (s *Service) boundScope(ctx context.Context, sc *archiveScope) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT COALESCE(max(seq), 0), count(*) FROM archive_manifests
		WHERE project_id = $1 AND ($2 = 0 OR year = $2) AND ($3::boolean IS NULL OR test_mode = $3) AND stored_at IS NOT NULL`,
		sc.projectID, sc.year, sc.testMode).Scan(&sc.upto, &n)
	if sc.upto == 0 {
		sc.upto = -1 // nothing stored: match nothing
	}
	return n, err
}

// objectKinds is the order of an invoice's objects everywhere.
var objectKinds = []string{"xml", "pdf", "manifest"}

// kinds are the objects a's document has: a small-amount invoice (§ 33
// UStDV) is a PDF only.
func (a archivedInvoice) kinds() []string {
	if a.format == string(billing.FormatSmallAmount) {
		return objectKinds[1:]
	}
	return objectKinds
}

func (a archivedInvoice) entry() ArchiveEntry {
	e := ArchiveEntry{InvoiceID: a.invoiceID, Number: a.number, IssueDate: a.issueDate.Format(time.DateOnly), Type: a.typ, Format: a.format,
		NumberRange: a.rangeKey, ChainSeq: a.chainSeq, ManifestSHA256: a.manifestSHA, Objects: []ArchiveObject{}}
	if a.prevSHA != "" {
		p := a.prevSHA
		e.PreviousManifestSHA256 = &p
	}
	for _, k := range objectKinds {
		o, ok := a.objects[k]
		if !ok {
			continue
		}
		ao := ArchiveObject{Kind: k, Key: o.st.Key, VersionID: o.st.VersionID, SHA256: o.st.SHA256, Size: o.st.Size, EmbeddedIn: o.embeddedIn}
		if o.st.InBatch {
			off := o.st.Offset
			ao.ByteOffset = &off
		}
		if !o.st.RetainUntil.IsZero() {
			u := o.st.RetainUntil.UTC().Format(time.RFC3339)
			ao.RetainUntil = &u
		}
		e.Objects = append(e.Objects, ao)
	}
	return e
}

// parseYear reads the required query parameter year.
func parseYear(q map[string][]string) (int, error) {
	v := q["year"]
	if len(v) != 1 {
		return 0, apperr.Field("year", "year is required once, as YYYY")
	}
	y, err := strconv.Atoi(v[0])
	if err != nil || len(v[0]) != 4 || y < 2000 {
		return 0, apperr.Field("year", "year must be a year from 2000 to 9999 as YYYY, got %q", v[0])
	}
	return y, nil
}

// liveOnly selects live documents in an archiveScope.
func liveOnly() *bool { f := false; return &f }

func (s *Service) listArchive(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	projectID := httpx.ProjectID(ctx)
	q := r.URL.Query()
	year, err := parseYear(q)
	if err != nil {
		return err
	}
	f, err := parseListFilter(map[string][]string{"limit": q["limit"], "cursor": q["cursor"]})
	if err != nil {
		return err
	}
	list, next, more, err := s.ArchiveEntries(ctx, projectID, year, f.cursor, f.limit)
	if err != nil {
		return err
	}
	page := ArchivePage{Data: list, NextCursor: &next, HasMore: more, RequestID: httpx.RequestID(ctx)}
	httpx.WriteJSON(w, r, http.StatusOK, page)
	return nil
}

// VerifyProblem is one finding of VerifyArchive.
type VerifyProblem struct {
	InvoiceID string `json:"invoiceId"`
	Number    string `json:"number"`
	Kind      string `json:"kind"` // xml, pdf, manifest, chain
	archive.Problem
}

// VerifyReport is the result of VerifyArchive: objects checked, objects
// without a problem, and every problem found.
type VerifyReport struct {
	Checked  int             `json:"checked"`
	OK       int             `json:"ok"`
	Problems []VerifyProblem `json:"problems"`
}

// VerifyArchive re-reads every archived object of the project (of the year;
// 0: every year), live and test documents, by the version id recorded in
// the database, and checks it: SHA-256 and size against the record, still
// the key's current version, COMPLIANCE retention until the recorded date
// (live documents). It checks each manifest against the records and each
// number range's chain: positions 1, 2, ... without gaps and in number
// order (problem kind "order"), each manifest naming the SHA-256 of the one
// before; and that every archived invoice has its manifest. progress is
// called after each invoice.
func (s *Service) VerifyArchive(ctx context.Context, projectID string, year int, progress func(done, total int)) (VerifyReport, error) {
	rep := VerifyReport{Problems: []VerifyProblem{}}
	sc := archiveScope{projectID: projectID, year: year}
	total, err := s.boundScope(ctx, &sc)
	if err != nil {
		return rep, err
	}
	if total > 0 && s.archive == nil {
		return rep, apperr.New(apperr.NotImplemented, "not_implemented", "this service does not read the archive")
	}
	done := 0
	err = s.eachArchived(ctx, sc, func(list []archivedInvoice) error {
		prevs, err := s.predecessors(ctx, projectID, list)
		if err != nil {
			return err
		}
		for _, a := range list {
			s.verifyOne(ctx, &rep, a, prevs)
			done++
			if progress != nil {
				progress(done, total)
			}
		}
		return nil
	})
	if err != nil {
		return rep, err
	}
	// Every archived invoice has its manifest.
	rows, err := s.pool.Query(ctx, `SELECT i.id::text, i.number FROM invoices i
		WHERE i.project_id = $1 AND i.status = 'archived' AND ($2 = 0 OR extract(year FROM i.issue_date) = $2)
		AND NOT EXISTS (SELECT 1 FROM archive_manifests m WHERE m.invoice_id = i.id AND m.stored_at IS NOT NULL)
		ORDER BY i.range_key, i.seq`, projectID, year)
	if err != nil {
		return rep, err
	}
	var id, number string
	_, err = pgx.ForEachRow(rows, []any{&id, &number}, func() error {
		rep.Problems = append(rep.Problems, VerifyProblem{InvoiceID: id, Number: number, Kind: "manifest",
			Problem: archive.Problem{Kind: "unanchored", Detail: "archived without a manifest (o2i archive backfill anchors it)"}})
		return nil
	})
	return rep, err
}

// chainLink is a position in a number range's chain.
type chainLink struct {
	rangeKey string
	seq      int64
}

// predecessor is the manifest at a chain's position: its recorded SHA-256
// and its document's number and position in the number range.
type predecessor struct {
	sha256, number string
	numberSeq      int64
}

// predecessors returns the manifest before each of list's manifests in its
// chain (absent: no manifest at that position).
func (s *Service) predecessors(ctx context.Context, projectID string, list []archivedInvoice) (map[chainLink]predecessor, error) {
	ranges := make([]string, 0, len(list))
	seqs := make([]int64, 0, len(list))
	for _, a := range list {
		if a.chainSeq > 1 {
			ranges, seqs = append(ranges, a.rangeKey), append(seqs, a.chainSeq-1)
		}
	}
	out := map[chainLink]predecessor{}
	if len(seqs) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT m.range_key, m.chain_seq, m.sha256, m.number, COALESCE(i.seq, 0) FROM archive_manifests m
		JOIN unnest($2::text[], $3::bigint[]) AS l (range_key, chain_seq) ON l.range_key = m.range_key AND l.chain_seq = m.chain_seq
		LEFT JOIN invoices i ON i.id = m.invoice_id
		WHERE m.project_id = $1`, projectID, ranges, seqs)
	if err != nil {
		return nil, err
	}
	var l chainLink
	var p predecessor
	_, err = pgx.ForEachRow(rows, []any{&l.rangeKey, &l.seq, &p.sha256, &p.number, &p.numberSeq}, func() error { out[l] = p; return nil })
	return out, err
}

// verifyOne checks one invoice's objects, manifest and chain link.
func (s *Service) verifyOne(ctx context.Context, rep *VerifyReport, a archivedInvoice, prevs map[chainLink]predecessor) {
	problem := func(kind string, p archive.Problem) {
		rep.Problems = append(rep.Problems, VerifyProblem{InvoiceID: a.invoiceID, Number: a.number, Kind: kind, Problem: p})
	}
	var manifest, pdf []byte
	var pdfFound []archive.Problem
	for _, kind := range a.checkOrder() {
		o, ok := a.objects[kind]
		if !ok {
			problem(kind, archive.Problem{Kind: "unanchored", Detail: "no " + kind + " is recorded for this invoice"})
			continue
		}
		rep.Checked++
		if o.embeddedIn != "" {
			found := checkEmbedded(o, a.objects[o.embeddedIn], pdf, pdfFound)
			for _, p := range found {
				problem(kind, p)
			}
			if len(found) == 0 {
				rep.OK++
			}
			continue
		}
		arc, err := s.archive.InBucket(o.bucket)
		if err != nil {
			problem(kind, archive.Problem{Key: o.st.Key, VersionID: o.st.VersionID, Kind: "unreadable", Detail: err.Error()})
			continue
		}
		octx, cancel := context.WithTimeout(ctx, objectTimeout)
		data, found := arc.Check(octx, o.st)
		cancel()
		if !a.testMode && !arc.Locked() {
			found = append(found, archive.Problem{Key: o.st.Key, VersionID: o.st.VersionID, Kind: "retention",
				Detail: "a live document lies in bucket " + o.bucket + ", which has no retention"})
		}
		for _, p := range found {
			problem(kind, p)
		}
		if len(found) == 0 {
			rep.OK++
		}
		switch kind {
		case "manifest":
			manifest = data
		case "pdf":
			pdf, pdfFound = data, found
		}
	}
	chainProblem := func(format string, args ...any) {
		problem("chain", archive.Problem{Kind: "chain", Detail: fmt.Sprintf(format, args...)})
	}
	if a.chainSeq > 1 {
		prev, ok := prevs[chainLink{a.rangeKey, a.chainSeq - 1}]
		switch {
		case !ok:
			chainProblem("number range %s: no manifest at position %d before this one", a.rangeKey, a.chainSeq-1)
		case prev.sha256 != a.prevSHA:
			chainProblem("recorded previous manifest %s, the manifest at position %d is %s", a.prevSHA, a.chainSeq-1, prev.sha256)
		}
		// Positions follow number order: the manifest before is of a lower number.
		if ok && prev.numberSeq >= a.numberSeq {
			problem("chain", archive.Problem{Kind: "order", Detail: fmt.Sprintf(
				"number range %s: number %s is at position %d, after number %s at position %d; positions must follow number order",
				a.rangeKey, a.number, a.chainSeq, prev.number, a.chainSeq-1)})
		}
	}
	if manifest != nil {
		if msg := manifestMismatch(manifest, a); msg != "" {
			chainProblem("%s", msg)
		}
	}
}

// checkOrder is the order verify reads a's objects in: an XML kept inside
// the PDF after the PDF, whose bytes it is read from.
func (a archivedInvoice) checkOrder() []string {
	if a.objects["xml"].embeddedIn == "" {
		return a.kinds()
	}
	return []string{"pdf", "xml", "manifest"}
}

// checkEmbedded checks an XML kept only inside the PDF (anchor xml) with
// the PDF's anchor, the PDF's bytes as read by verify (nil: not read) and
// the PDF's problems, which are the XML's too: the anchor must name the
// PDF's object, and the embedded file must have the recorded SHA-256 and
// size.
func checkEmbedded(xml, pdf anchored, data []byte, pdfFound []archive.Problem) []archive.Problem {
	p := func(kind, format string, args ...any) archive.Problem {
		return archive.Problem{Key: xml.st.Key, VersionID: xml.st.VersionID, Kind: kind, Detail: fmt.Sprintf(format, args...)}
	}
	if xml.st.Key != pdf.st.Key || xml.st.VersionID != pdf.st.VersionID || xml.bucket != pdf.bucket || !xml.st.RetainUntil.Equal(pdf.st.RetainUntil) {
		return []archive.Problem{p("altered", "the XML is recorded inside %s version %q, the PDF is %s version %q",
			xml.st.Key, xml.st.VersionID, pdf.st.Key, pdf.st.VersionID)}
	}
	var out []archive.Problem
	for _, f := range pdfFound {
		if f.Kind != "altered" { // an altered PDF is judged by its embedded file below
			out = append(out, p(f.Kind, "the PDF it is embedded in: %s", f.Detail))
		}
	}
	if data == nil {
		return out
	}
	embedded, err := archive.EmbeddedXML(data)
	switch {
	case err != nil:
		out = append(out, p("altered", "%v", err))
	case archive.SHA256(embedded) != xml.st.SHA256 || int64(len(embedded)) != xml.st.Size:
		out = append(out, p("altered", "the embedded %s has SHA-256 %s and %d bytes, recorded %s and %d bytes",
			archive.EmbeddedXMLName, archive.SHA256(embedded), len(embedded), xml.st.SHA256, xml.st.Size))
	}
	return out
}

// manifestMismatch compares a manifest as read from the archive with the
// database's record; "" when they agree.
func manifestMismatch(b []byte, a archivedInvoice) string {
	m, err := archive.ParseManifest(b)
	if err != nil {
		return err.Error()
	}
	if m.InvoiceID != a.invoiceID || m.Number != a.number || m.NumberRange != a.rangeKey || m.ChainSeq != a.chainSeq {
		return fmt.Sprintf("the manifest names invoice %s %s at position %d of %s, recorded %s %s at %d of %s",
			m.InvoiceID, m.Number, m.ChainSeq, m.NumberRange, a.invoiceID, a.number, a.chainSeq, a.rangeKey)
	}
	if m.PreviousManifestSHA256 != a.prevSHA {
		return fmt.Sprintf("the manifest names previous manifest %q, recorded %q", m.PreviousManifestSHA256, a.prevSHA)
	}
	for _, o := range m.Objects {
		rec, ok := a.objects[o.Kind]
		if !ok || o.Kind == "manifest" {
			return fmt.Sprintf("the manifest lists an object of kind %q", o.Kind)
		}
		want := archive.Object(o.Kind, rec.st)
		if rec.embeddedIn != "" {
			want = archive.EmbeddedObject(rec.st)
		}
		if o.EmbeddedIn != want.EmbeddedIn || o.Key != want.Key || o.VersionID != want.VersionID || o.SHA256 != want.SHA256 ||
			o.Size != want.Size || (o.RetainUntil == nil) != (want.RetainUntil == nil) || (o.RetainUntil != nil && *o.RetainUntil != *want.RetainUntil) ||
			(o.Offset == nil) != (want.Offset == nil) || (o.Offset != nil && *o.Offset != *want.Offset) {
			return fmt.Sprintf("the manifest's %s entry differs from the record", o.Kind)
		}
	}
	if want := len(a.kinds()) - 1; len(m.Objects) != want {
		return fmt.Sprintf("the manifest lists %d documents, want %s", len(m.Objects), strings.Join(a.kinds()[:want], " and "))
	}
	return ""
}

// ExportFile is one file of the tax-audit export.
const (
	ExportIndexXML = "index.xml"
	ExportIndexCSV = "index.csv"
	// ExportConsoleChanges is the console's change log of the year: one
	// JSON object per line, oldest first.
	ExportConsoleChanges = "console-changes.jsonl"
)

// ExportArchive writes the tax-audit export of a year's live documents as a
// ZIP to w, streaming: each document and manifest (read by its recorded
// version and checked against its recorded SHA-256 and size), then
// index.csv (one row per file) and index.xml, which describes index.csv in
// the description standard for data handed over in German tax audits
// (GDPdU "Beschreibungsstandard"). Test documents have no tax effect and are
// not part of it. An object that does not match its record stops the
// export with ErrCorrupt: the ZIP is then incomplete and must be discarded.
// progress is called after each invoice.
func (s *Service) ExportArchive(ctx context.Context, w io.Writer, projectID string, year int, progress func(done, total int)) (err error) {
	defer apperr.Wrap(&err, "export archive %d", year)
	sc := archiveScope{projectID: projectID, year: year, testMode: liveOnly()}
	total, err := s.boundScope(ctx, &sc)
	if err != nil {
		return err
	}
	var supplier string
	if err := s.pool.QueryRow(ctx, `SELECT COALESCE(NULLIF(settings->>'sellerName', ''), name) FROM projects WHERE id = $1`, projectID).Scan(&supplier); err != nil {
		return err
	}
	// File names: the invoice number, made safe; the invoice id's start
	// tells apart numbers that become equal. Both walks name alike.
	used, taken := map[string]string{}, map[string]bool{}
	fileBase := func(a archivedInvoice) string {
		if b, ok := used[a.invoiceID]; ok {
			return b
		}
		base := strings.Map(safeFileRune, a.number)
		if taken[base] {
			base += "_" + a.invoiceID[:8]
		}
		used[a.invoiceID], taken[base] = base, true
		return base
	}
	fileName := func(a archivedInvoice, kind string) string {
		if kind == "manifest" {
			return "manifests/" + fileBase(a) + ".json"
		}
		return "documents/" + fileBase(a) + "." + kind
	}
	zw := zip.NewWriter(w)
	// First the files, each checked against its record while it streams...
	done := 0
	err = s.eachArchived(ctx, sc, func(list []archivedInvoice) error {
		for _, a := range list {
			var pdf []byte // read once when the XML lies inside it
			for _, kind := range a.kinds() {
				o, ok := a.objects[kind]
				if !ok {
					return fmt.Errorf("invoice %s has no recorded %s", a.number, kind)
				}
				arc, err := s.archive.InBucket(o.bucket)
				if err != nil {
					return err
				}
				fw, err := zw.CreateHeader(&zip.FileHeader{Name: fileName(a, kind), Method: zip.Deflate, Modified: a.issueDate})
				if err != nil {
					return err
				}
				octx, cancel := context.WithTimeout(ctx, objectTimeout)
				switch {
				case o.embeddedIn != "":
					var xml []byte
					if pdf, err = arc.Verified(octx, a.objects[o.embeddedIn].st); err == nil {
						if xml, err = archive.VerifiedEmbedded(pdf, o.st); err == nil {
							_, err = fw.Write(xml)
						}
					}
				case kind == "pdf" && pdf != nil:
					_, err = fw.Write(pdf)
				default:
					err = arc.CopyVerified(octx, fw, o.st)
				}
				cancel()
				if err != nil {
					return err
				}
			}
			done++
			if progress != nil {
				progress(done, total)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// ...then index.csv from the same records, in a second walk.
	fw, err := zw.Create(ExportIndexCSV)
	if err != nil {
		return err
	}
	cw := csv.NewWriter(fw)
	cw.Comma, cw.UseCRLF = ';', true
	if err := cw.Write(exportColumnNames()); err != nil {
		return err
	}
	err = s.eachArchived(ctx, sc, func(list []archivedInvoice) error {
		for _, a := range list {
			for _, kind := range a.kinds() {
				o := a.objects[kind]
				retain := ""
				if !o.st.RetainUntil.IsZero() {
					retain = o.st.RetainUntil.UTC().Format("02.01.2006")
				}
				if err := cw.Write([]string{a.number, a.issueDate.Format("02.01.2006"), a.typ, a.rangeKey, strconv.FormatInt(a.chainSeq, 10),
					kind, fileName(a, kind), o.st.SHA256, strconv.FormatInt(o.st.Size, 10), o.st.VersionID, retain, a.manifestSHA, a.prevSHA}); err != nil {
					return err
				}
			}
		}
		cw.Flush()
		return cw.Error()
	})
	if err != nil {
		return err
	}
	if fw, err = zw.Create(ExportIndexXML); err != nil {
		return err
	}
	if err := writeGDPdUIndex(fw, supplier, year); err != nil {
		return err
	}
	if fw, err = zw.Create(ExportConsoleChanges); err != nil {
		return err
	}
	if err := s.writeConsoleChanges(ctx, fw, projectID, year); err != nil {
		return err
	}
	return zw.Close()
}

// exportColumns describe index.csv: name, description, type (A
// alphanumeric, D date DD.MM.YYYY, N integer).
var exportColumns = []struct{ name, desc, typ string }{
	{"Rechnungsnummer", "Rechnungsnummer (invoice number)", "A"},
	{"Rechnungsdatum", "Ausstellungsdatum (issue date)", "D"},
	{"Belegart", "invoice, voucher_sale, cancellation, credit_note", "A"},
	{"Nummernkreis", "Nummernkreis (number range) der Hash-Kette", "A"},
	{"Kettenposition", "Position des Manifests in der Hash-Kette des Nummernkreises", "N"},
	{"Dateiart", "xml (EN 16931), pdf (ZUGFeRD PDF/A-3, Lesekopie oder Kleinbetragsrechnung nach § 33 UStDV ohne XML), manifest", "A"},
	{"Datei", "Pfad der Datei in diesem Export", "A"},
	{"SHA256", "SHA-256 der Datei (hex), bei der Archivierung festgehalten", "A"},
	{"Groesse", "Groesse der Datei in Bytes", "N"},
	{"VersionId", "Versions-ID des Objekts im Archiv", "A"},
	{"AufbewahrtBis", "Ende der Aufbewahrung (COMPLIANCE-Sperre)", "D"},
	{"ManifestSHA256", "SHA-256 des Manifests der Rechnung (Kettenhash)", "A"},
	{"VorherigesManifestSHA256", "SHA-256 des vorherigen Manifests im Nummernkreis; leer beim ersten", "A"},
}

func exportColumnNames() []string {
	out := make([]string, len(exportColumns))
	for i, c := range exportColumns {
		out[i] = c.name
	}
	return out
}

// writeGDPdUIndex writes index.xml: the description of index.csv in the
// GDPdU description standard (DTD gdpdu-01-09-2004.dtd).
func writeGDPdUIndex(w io.Writer, supplier string, year int) error {
	type column struct {
		Name         string    `xml:"Name"`
		Description  string    `xml:"Description"`
		Numeric      *struct{} `xml:"Numeric"`
		AlphaNumeric *struct{} `xml:"AlphaNumeric"`
		Date         *struct {
			Format string `xml:"Format"`
		} `xml:"Date"`
	}
	type table struct {
		URL         string `xml:"URL"`
		Name        string `xml:"Name"`
		Description string `xml:"Description"`
		Validity    struct {
			Range struct {
				From string `xml:"From"`
				To   string `xml:"To"`
			} `xml:"Range"`
		} `xml:"Validity"`
		UTF8                struct{} `xml:"UTF8"`
		DecimalSymbol       string   `xml:"DecimalSymbol"`
		DigitGroupingSymbol string   `xml:"DigitGroupingSymbol"`
		VariableLength      struct {
			ColumnDelimiter    string   `xml:"ColumnDelimiter"`
			RecordDelimiter    string   `xml:"RecordDelimiter"`
			TextEncapsulator   string   `xml:"TextEncapsulator"`
			VariablePrimaryKey []column `xml:"VariablePrimaryKey"`
			VariableColumn     []column `xml:"VariableColumn"`
		} `xml:"VariableLength"`
	}
	type dataSet struct {
		XMLName      xml.Name `xml:"DataSet"`
		Version      string   `xml:"Version"`
		DataSupplier struct {
			Name     string `xml:"Name"`
			Location string `xml:"Location"`
			Comment  string `xml:"Comment"`
		} `xml:"DataSupplier"`
		Media struct {
			Name  string `xml:"Name"`
			Table table  `xml:"Table"`
		} `xml:"Media"`
	}
	var d dataSet
	d.Version = "1.0"
	d.DataSupplier.Name = supplier
	d.DataSupplier.Location = "o2i archive"
	d.DataSupplier.Comment = fmt.Sprintf("Archivierte Rechnungsdokumente %d mit Manifesten (Hash-Kette je Nummernkreis)", year)
	d.Media.Name = fmt.Sprintf("Rechnungsarchiv %d", year)
	t := &d.Media.Table
	t.URL, t.Name = ExportIndexCSV, "Archivindex"
	t.Description = "Ein Datensatz je Datei dieses Exports: Rechnungsdokumente (XML, PDF) und Manifeste"
	t.Validity.Range.From, t.Validity.Range.To = fmt.Sprintf("01.01.%d", year), fmt.Sprintf("31.12.%d", year)
	t.DecimalSymbol, t.DigitGroupingSymbol = ",", "."
	v := &t.VariableLength
	v.ColumnDelimiter, v.RecordDelimiter, v.TextEncapsulator = ";", "&#13;&#10;", `"`
	for i, c := range exportColumns {
		col := column{Name: c.name, Description: c.desc}
		switch c.typ {
		case "N":
			col.Numeric = &struct{}{}
		case "D":
			col.Date = &struct {
				Format string `xml:"Format"`
			}{"DD.MM.YYYY"}
		default:
			col.AlphaNumeric = &struct{}{}
		}
		if i == 0 {
			v.VariablePrimaryKey = append(v.VariablePrimaryKey, col)
		} else {
			v.VariableColumn = append(v.VariableColumn, col)
		}
	}
	b, err := xml.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	// The record delimiter is written as character references, as the
	// standard's examples do; encoding/xml would escape the ampersands.
	b = bytes.Replace(b, []byte("&amp;#13;&amp;#10;"), []byte("&#13;&#10;"), 1)
	_, err = io.WriteString(w, xml.Header+`<!DOCTYPE DataSet SYSTEM "gdpdu-01-09-2004.dtd">`+"\n")
	if err == nil {
		_, err = w.Write(append(b, '\n'))
	}
	return err
}

// archiveExportTimeout bounds one streamed tax-audit export (a year of
// documents), in place of the API's request timeout.
const archiveExportTimeout = 30 * time.Minute

func (s *Service) exportArchive(w http.ResponseWriter, r *http.Request) error {
	year, err := parseYear(r.URL.Query())
	if err != nil {
		return err
	}
	if s.archive == nil {
		return apperr.New(apperr.NotImplemented, "not_implemented", "this service does not serve archived documents")
	}
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="archive-%d.zip"`, year))
	cw := &countingWriter{w: w}
	err = s.ExportArchive(r.Context(), cw, httpx.ProjectID(r.Context()), year, nil)
	if err != nil && cw.n > 0 {
		// The body has started: cut the response so that the client never
		// takes an incomplete ZIP for a whole one.
		panic(http.ErrAbortHandler)
	}
	if err != nil {
		w.Header().Del("Content-Disposition")
	}
	return err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeConsoleChanges writes the project's console changes made in year
// (UTC) as JSON lines, oldest first: {"id","at","actor","action","target",
// "before","after"}, as the append-only change log holds them.
func (s *Service) writeConsoleChanges(ctx context.Context, w io.Writer, projectID string, year int) error {
	from := time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC)
	rows, err := s.pool.Query(ctx, `SELECT json_build_object('id', id, 'at', at, 'actor', actor_email, 'action', action,
			'target', target, 'before', before, 'after', after)::text
		FROM console_audit_log WHERE project_id = $1 AND at >= $2 AND at < $3 ORDER BY id`, projectID, from, from.AddDate(1, 0, 0))
	if err != nil {
		return err
	}
	var line string
	_, err = pgx.ForEachRow(rows, []any{&line}, func() error {
		_, err := io.WriteString(w, line+"\n")
		return err
	})
	return err
}
