package catalog_test

import (
	"context"
	"sync"
	"testing"

	"github.com/o2i-service/o2i/internal/catalog"
	"github.com/o2i-service/o2i/internal/money"
	"github.com/o2i-service/o2i/internal/testenv"
)

func TestResolveMatchingRules(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	project := testenv.Project(t, pool, true)
	ctx := context.Background()
	c := catalog.New(pool)

	lines := []catalog.Line{
		{ProductID: "A-1", SKU: "SKU-1", Name: "Mug"}, // 0: by productId
		{ProductID: "A-1", SKU: "SKU-9", Name: "Cup"}, // 1: same productId, other name and SKU: same product
		{ProductID: "A-2", SKU: "SKU-1", Name: "Mug"}, // 2: other productId, same name: other product
		{SKU: "SKU-1", Name: "Mug"},                   // 3: by SKU
		{SKU: "SKU-1", Name: "Renamed mug"},           // 4: same SKU: same product as 3
		{Name: "Mug"},                                 // 5: by name
		{Name: "Mug"},                                 // 6: same name: same as 5
		{Name: "mug"},                                 // 7: names match exactly: other product
		{SKU: "SKU-2", Name: "Mug"},                   // 8: new SKU scheme: new product
	}
	ids, err := c.Resolve(ctx, project, lines)
	if err != nil {
		t.Fatal(err)
	}
	same := [][2]int{{0, 1}, {3, 4}, {5, 6}}
	for _, p := range same {
		if ids[p[0]] != ids[p[1]] {
			t.Errorf("lines %d and %d: want the same product, got %s and %s", p[0], p[1], ids[p[0]], ids[p[1]])
		}
	}
	distinct := map[string]int{}
	for i, id := range ids {
		if i == 1 || i == 4 || i == 6 {
			continue
		}
		if j, dup := distinct[id]; dup {
			t.Errorf("lines %d and %d: want different products, both %s", j, i, id)
		}
		distinct[id] = i
	}

	// A fresh catalogue (another process) finds the same products.
	ids2, err := catalog.New(pool).Resolve(ctx, project, lines)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ids {
		if ids[i] != ids2[i] {
			t.Errorf("line %d: second resolve gave %s, want %s", i, ids2[i], ids[i])
		}
	}

	// Another project has its own catalogue.
	other := testenv.Project(t, pool, true)
	ids3, err := c.Resolve(ctx, other, lines[:1])
	if err != nil {
		t.Fatal(err)
	}
	if ids3[0] == ids[0] {
		t.Error("another project resolved to the same product")
	}

	p, err := catalog.Get(ctx, pool, project, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if p.MatchKind != catalog.ByProductID || p.ExternalID != "A-1" || p.Name != "Mug" || p.SKU != "SKU-1" {
		t.Errorf("product = %+v", p)
	}
	if _, err := catalog.Get(ctx, pool, other, ids[0]); err == nil {
		t.Error("Get of another project's product succeeded")
	}
}

func TestResolveConcurrent(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	project := testenv.Project(t, pool, true)
	lines := []catalog.Line{{ProductID: "P"}, {SKU: "S", Name: "x"}, {Name: "N"}}
	const n = 16
	results := make([][]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = catalog.New(pool).Resolve(context.Background(), project, lines)
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		for j := range lines {
			if results[i][j] != results[0][j] {
				t.Errorf("resolver %d line %d: %s, want %s", i, j, results[i][j], results[0][j])
			}
		}
	}
	ps, err := catalog.List(context.Background(), pool, project)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != len(lines) {
		t.Errorf("%d products, want %d", len(ps), len(lines))
	}
}

func TestConfigure(t *testing.T) {
	t.Parallel()
	pool := testenv.Pool(t)
	project := testenv.Project(t, pool, true)
	ctx := context.Background()
	ids, err := catalog.New(pool).Resolve(ctx, project, []catalog.Line{{ProductID: "SAAS-1", Name: "Plan"}})
	if err != nil {
		t.Fatal(err)
	}
	saas, months, rate := catalog.RecognizeSaaS, 12, money.MustParse("19")
	p, err := catalog.Configure(ctx, pool, project, ids[0], catalog.Settings{
		RevenueRecognition: &saas, DefaultPeriodMonths: &months, DefaultTaxRate: &rate,
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.RevenueRecognition != "saas" || p.DefaultPeriodMonths == nil || *p.DefaultPeriodMonths != 12 ||
		p.DefaultTaxRate == nil || !p.DefaultTaxRate.Equal(rate) {
		t.Errorf("configured product = %+v", p)
	}
	bad := "monthly"
	if _, err := catalog.Configure(ctx, pool, project, ids[0], catalog.Settings{RevenueRecognition: &bad}); err == nil {
		t.Error("unknown revenue recognition accepted")
	}
	empty := ""
	p, err = catalog.Configure(ctx, pool, project, ids[0], catalog.Settings{RevenueRecognition: &empty, ClearTaxRate: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.RevenueRecognition != "" || p.DefaultTaxRate != nil || p.DefaultPeriodMonths == nil {
		t.Errorf("cleared product = %+v", p)
	}
}
