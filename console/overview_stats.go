package console

import (
	"sort"
	"time"

	"github.com/o2i-service/o2i/query"
)

// stats is the overview's numbers and its chart of documents per day.
type stats struct {
	query.Overview
	Reasons []reasonCount // waiting and held, most first
	Lag     string        // "" when nothing waits to be archived
	Bars    []bar
	Max     int
}

type reasonCount struct {
	Key   string // the text key (waiting.payment) or a task type
	Held  bool
	Count int
	More  bool // counted up to query.WaitingCap, there are more
}

// bar is one day of the chart, in the SVG's coordinates.
type bar struct {
	X, Y, H, Count int
	Day            string
	Label          string // the day of the month
}

// Chart geometry: 14 bars in a 420 × 120 box, 20 below for the days.
const (
	chartW, chartH, barW = 420, 120, 24
)

// newStats lays out the overview: reasons sorted, the lag rounded, the
// bars scaled to the largest day. Pure.
func newStats(o query.Overview) *stats {
	s := &stats{Overview: o}
	for k, n := range o.Waiting {
		s.Reasons = append(s.Reasons, reasonCount{Key: "waiting." + k, Count: n, More: n >= query.WaitingCap})
	}
	for k, n := range o.Held {
		s.Reasons = append(s.Reasons, reasonCount{Key: k, Held: true, Count: n})
	}
	sort.Slice(s.Reasons, func(i, j int) bool {
		if s.Reasons[i].Count != s.Reasons[j].Count {
			return s.Reasons[i].Count > s.Reasons[j].Count
		}
		return s.Reasons[i].Key < s.Reasons[j].Key
	})
	if o.Lag > 0 {
		s.Lag = o.Lag.Round(time.Second).String()
	}
	for _, d := range o.PerDay {
		s.Max = max(s.Max, d.Count)
	}
	step := chartW / max(len(o.PerDay), 1)
	for i, d := range o.PerDay {
		h := 0
		if s.Max > 0 {
			h = d.Count * chartH / s.Max
		}
		if d.Count > 0 && h < 2 {
			h = 2
		}
		s.Bars = append(s.Bars, bar{X: i*step + (step-barW)/2, Y: chartH - h, H: h, Count: d.Count,
			Day: d.Day.Format(time.DateOnly), Label: d.Day.Format("02")})
	}
	return s
}
