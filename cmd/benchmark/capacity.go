package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/o2i-service/o2i/archive"
)

// roleFigures are what one process of each role sustains on one core of
// this machine, and what one order costs in storage, as the roles stage
// measures them. Rates "per core" are items per CPU-second of the role's
// process (its own CPU time, from /proc), so they do not depend on how
// busy the rest of the machine was; the mailer's rate is per second of
// wall time, since it sends one message after the other and waits on the
// relay, not on its core.
type roleFigures struct {
	OrdersPerCore           float64 `json:"ordersPerCore"`           // POST /v1/orders, api
	ReadsPerCore            float64 `json:"readsPerCore"`            // GET /v1/orders/{orderNo}, api
	RelayEventsPerCore      float64 `json:"relayEventsPerCore"`      // events published, relay
	ProjectionEventsPerCore float64 `json:"projectionEventsPerCore"` // events applied, projector
	InvoicesPerCore         float64 `json:"invoicesPerCore"`         // archived invoices, invoicer
	MailsPerSecond          float64 `json:"mailsPerSecond"`          // e-mails sent by one mailer (invoicer role)
	RangeNumbersPerSecond   float64 `json:"rangeNumbersPerSecond"`   // N: numbers one range issues, issuing work inside its lock
	EventsPerOrder          float64 `json:"eventsPerOrder"`          // events relayed and projected per invoiced order
	DBBytesPerOrder         float64 `json:"dbBytesPerOrder"`         // PostgreSQL growth per order with its invoice
	WALBytesPerOrder        float64 `json:"walBytesPerOrder"`        // WAL per order with its invoice (accept, relay, projection, invoice)
	ArchiveBytesPerInvoice  float64 `json:"archiveBytesPerInvoice"`  // PDF + XML + manifest in the object store
	RedisBytesPerOrder      float64 `json:"redisBytesPerOrder"`      // one status view (MEMORY USAGE)
}

// assumptions turn the per-role figures into a plan; they are not measured.
type assumptions struct {
	PeakFactor     float64 // the peak hour's rate over the day's average
	ReadsPerOrder  float64 // status reads (polls) per order
	Utilisation    float64 // the share of a core a replica may use at the peak (the headroom is the rest)
	MinReplicas    int     // per role, for availability
	RetentionYears float64 // the archive's retention of invoices
	MinPartitions  int
}

// defaultAssumptions: a peak hour at 10× the day's average, 10 status reads
// per order, replicas at most half busy at the peak, two of each role, the
// archive's retention of invoices (archive.RetentionYears), at least 12
// partitions.
var defaultAssumptions = assumptions{PeakFactor: 10, ReadsPerOrder: 10, Utilisation: 0.5, MinReplicas: 2, RetentionYears: archive.RetentionYears, MinPartitions: 12}

// capacityRow is the plan for one order volume.
type capacityRow struct {
	OrdersPerDay        int64
	PeakOrdersPerSecond float64
	API                 int     // replicas of one core
	RelayCores          float64 // cores the leading relay needs at the peak (one relay publishes; the others stand by)
	Projector           int
	Invoicer            int // replicas of one core: the invoicing or the mailing, whichever needs more
	InvoicerInvoicing   int // replicas the invoicing alone needs
	InvoicerMailing     int // replicas the mailing alone needs (one mailer per invoicer process)
	Partitions          int
	Ranges              int     // number ranges the peak's invoices need at N per range (with the same headroom)
	DBBytesPerDay       float64 // PostgreSQL growth
	WALBytesPerDay      float64
	PeakWALBytesPerSec  float64
	ArchiveBytes        float64 // object store over the retention
	RedisBytesPerDay    float64 // status views added per day (they do not expire)
}

// planCapacity computes the plan for each volume. It fails on a figure
// that is not positive, naming it.
func planCapacity(f roleFigures, a assumptions, volumes []int64) ([]capacityRow, error) {
	for _, c := range []struct {
		name string
		v    float64
	}{
		{"ordersPerCore", f.OrdersPerCore}, {"readsPerCore", f.ReadsPerCore}, {"relayEventsPerCore", f.RelayEventsPerCore},
		{"projectionEventsPerCore", f.ProjectionEventsPerCore}, {"invoicesPerCore", f.InvoicesPerCore}, {"mailsPerSecond", f.MailsPerSecond},
		{"rangeNumbersPerSecond", f.RangeNumbersPerSecond}, {"eventsPerOrder", f.EventsPerOrder}, {"dbBytesPerOrder", f.DBBytesPerOrder},
		{"walBytesPerOrder", f.WALBytesPerOrder}, {"archiveBytesPerInvoice", f.ArchiveBytesPerInvoice}, {"redisBytesPerOrder", f.RedisBytesPerOrder},
		{"peakFactor", a.PeakFactor}, {"utilisation", a.Utilisation}, {"retentionYears", a.RetentionYears},
	} {
		if !(c.v > 0) || math.IsInf(c.v, 0) {
			return nil, fmt.Errorf("capacity: %s must be a positive number, got %v", c.name, c.v)
		}
	}
	if a.ReadsPerOrder < 0 || a.Utilisation > 1 || a.MinReplicas < 1 || a.MinPartitions < 1 {
		return nil, fmt.Errorf("capacity: readsPerOrder ≥ 0, utilisation ≤ 1, minReplicas and minPartitions ≥ 1")
	}
	replicas := func(load, perCore float64) int {
		return max(a.MinReplicas, int(math.Ceil(load/(perCore*a.Utilisation)-1e-9)))
	}
	out := make([]capacityRow, 0, len(volumes))
	for _, d := range volumes {
		if d <= 0 {
			return nil, fmt.Errorf("capacity: orders per day must be positive, got %d", d)
		}
		peak := float64(d) / 86400 * a.PeakFactor
		events := peak * f.EventsPerOrder
		r := capacityRow{OrdersPerDay: d, PeakOrdersPerSecond: peak}
		// The api serves the writes and the polls; its cores add up.
		apiCores := peak/f.OrdersPerCore + peak*a.ReadsPerOrder/f.ReadsPerCore
		r.API = replicas(apiCores, 1)
		r.RelayCores = events / f.RelayEventsPerCore / a.Utilisation
		r.Projector = replicas(events, f.ProjectionEventsPerCore)
		r.InvoicerInvoicing, r.InvoicerMailing = replicas(peak, f.InvoicesPerCore), replicas(peak, f.MailsPerSecond)
		r.Invoicer = max(r.InvoicerInvoicing, r.InvoicerMailing)
		r.Partitions = max(a.MinPartitions, 2*max(r.Projector, r.Invoicer))
		r.Ranges = max(1, int(math.Ceil(peak/(f.RangeNumbersPerSecond*a.Utilisation)-1e-9)))
		r.DBBytesPerDay = float64(d) * f.DBBytesPerOrder
		r.WALBytesPerDay = float64(d) * f.WALBytesPerOrder
		r.PeakWALBytesPerSec = peak * f.WALBytesPerOrder
		r.ArchiveBytes = float64(d) * 365.25 * a.RetentionYears * f.ArchiveBytesPerInvoice
		r.RedisBytesPerDay = float64(d) * f.RedisBytesPerOrder
		out = append(out, r)
	}
	return out, nil
}

// bytesHuman renders a size in decimal units (kB, MB, GB, TB, PB).
func bytesHuman(b float64) string {
	units := []string{"B", "kB", "MB", "GB", "TB", "PB", "EB"}
	i := 0
	for b >= 999.5 && i < len(units)-1 {
		b /= 1000
		i++
	}
	if b < 10 && i > 0 {
		return fmt.Sprintf("%.1f %s", b, units[i])
	}
	return fmt.Sprintf("%.0f %s", b, units[i])
}

// volumeName renders an order volume: 1 M, 10 M, 100 M.
func volumeName(d int64) string {
	if d%1_000_000 == 0 {
		return fmt.Sprintf("%d M", d/1_000_000)
	}
	return fmt.Sprintf("%d", d)
}

// capacityMarkdown renders the measured figures and the plan as the
// capacity section of the operations guide.
func capacityMarkdown(f roleFigures, a assumptions, rows []capacityRow, measured, machine string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s on %s by `make bench BENCHFLAGS=-only=roles`: each role's process alone, `GOMAXPROCS=1` and pinned to one core; "+
		"the engines (PostgreSQL, Redis, the broker, MinIO), the load generator and the roles it needs beside it share the machine. "+
		"A rate per core is items per CPU-second of the role's own process, so a busy machine slows the run more than it moves the figure.\n\n", measured, machine)
	b.WriteString("| measured, one process on one core | figure |\n|---|---|\n")
	for _, r := range [][2]string{
		{"api: orders accepted (`POST /v1/orders`, ~1 KB)", fmt.Sprintf("%.0f /s per core", f.OrdersPerCore)},
		{"api: status reads (`GET /v1/orders/{orderNo}`)", fmt.Sprintf("%.0f /s per core", f.ReadsPerCore)},
		{"relay: events published", fmt.Sprintf("%.0f /s per core", f.RelayEventsPerCore)},
		{"projector: events applied (PostgreSQL read models + Redis)", fmt.Sprintf("%.0f /s per core", f.ProjectionEventsPerCore)},
		{"invoicer: invoices issued, rendered and archived", fmt.Sprintf("%.0f /s per core", f.InvoicesPerCore)},
		{"invoicer: e-mails sent by its mailer (its pool of workers, to the local SMTP sink)", fmt.Sprintf("%.0f /s", f.MailsPerSecond)},
		{"the serialisation point: numbers one number range issues, the issuing work inside its lock (N)", fmt.Sprintf("%.0f /s", f.RangeNumbersPerSecond)},
		{"events per invoiced order (relayed and projected)", fmt.Sprintf("%.1f", f.EventsPerOrder)},
		{"PostgreSQL growth per order with its invoice (tables and indexes)", bytesHuman(f.DBBytesPerOrder)},
		{"WAL per order with its invoice (accept, relay, projection, invoicing)", bytesHuman(f.WALBytesPerOrder)},
		{"archive per invoice (PDF + XML + manifest)", bytesHuman(f.ArchiveBytesPerInvoice)},
		{"Redis per order status view (`MEMORY USAGE`)", bytesHuman(f.RedisBytesPerOrder)},
	} {
		fmt.Fprintf(&b, "| %s | %s |\n", r[0], r[1])
	}
	fmt.Fprintf(&b, "\nDerived (not measured): a peak hour at %g× the day's average rate, %g status reads per order, every order invoiced "+
		"and mailed once, replicas of one core each at most %.0f %% busy at the peak (the rest is headroom), at least %d of each role, "+
		"partitions twice the largest consumer group (room to scale out), at least %d; archive over %g years of retention, "+
		"raw bytes before the object store's erasure coding or replication; Redis status views do not expire.\n\n",
		a.PeakFactor, a.ReadsPerOrder, 100*a.Utilisation, a.MinReplicas, a.MinPartitions, a.RetentionYears)
	b.WriteString("| orders/day | peak orders/s | api | relay (leader) | projector | invoicer (for invoicing / for mailing) | partitions per topic | number ranges at the peak | PostgreSQL/day | WAL/day (peak) | archive over retention | Redis/day |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %.0f | %d | %s | %d | %d (%d / %d) | %d | %d | %s | %s (%s/s) | %s | %s |\n",
			volumeName(r.OrdersPerDay), r.PeakOrdersPerSecond, r.API, relayCores(r.RelayCores), r.Projector, r.Invoicer,
			r.InvoicerInvoicing, r.InvoicerMailing, r.Partitions, r.Ranges,
			bytesHuman(r.DBBytesPerDay), bytesHuman(r.WALBytesPerDay), bytesHuman(r.PeakWALBytesPerSec), bytesHuman(r.ArchiveBytes), bytesHuman(r.RedisBytesPerDay))
	}
	return b.String()
}

// relayCores renders the cores the leading relay needs; past one core one
// relay does not keep up.
func relayCores(c float64) string {
	if c <= 1 {
		return fmt.Sprintf("%.2f core", c)
	}
	return fmt.Sprintf("%.1f cores: past one relay", c)
}
