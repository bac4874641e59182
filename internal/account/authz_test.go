package account

import (
	"strings"
	"testing"
	"time"
)

// The role × action table, written out in full: a change of a right is a
// change of this test.
func TestAllows(t *testing.T) {
	want := map[Action][]Role{
		ViewProject:    {Owner, Developer, Accountant, Auditor},
		ViewKeys:       {Owner, Developer},
		ManageKeys:     {Owner, Developer},
		ViewActivity:   {Owner, Developer},
		ViewMembers:    {Owner},
		ManageMembers:  {Owner},
		ViewTasks:      {Owner, Accountant},
		ActOnTasks:     {Owner, Accountant},
		ViewOrders:     {Owner, Accountant},
		ViewInvoices:   {Owner, Accountant, Auditor},
		ViewArchive:    {Owner, Auditor},
		Export:         {Owner, Accountant, Auditor},
		ViewSettings:   {Owner, Developer, Accountant},
		EditSeller:     {Owner, Accountant},
		EditBank:       {Owner},
		EditProvider:   {Owner},
		GoLive:         {Owner},
		ResetTestData:  {Owner, Developer},
		SwitchTestMode: {Owner, Developer, Accountant},
		ViewAuditLog:   {Owner},
		RequireTOTP:    {Owner},
	}
	if len(want) != len(Actions) {
		t.Fatalf("the test names %d actions, the table %d", len(want), len(Actions))
	}
	for _, a := range Actions {
		roles, ok := want[a]
		if !ok {
			t.Errorf("action %s: not in the test", a)
		}
		for _, r := range Roles {
			exp := false
			for _, x := range roles {
				exp = exp || x == r
			}
			if got := Allows(r, a); got != exp {
				t.Errorf("Allows(%s, %s) = %v, want %v", r, a, got, exp)
			}
		}
		if Allows("", a) || Allows("admin", a) {
			t.Errorf("an unknown role may %s", a)
		}
	}
}

// The role × setting table of the README.
func TestSettingAction(t *testing.T) {
	for _, tc := range []struct {
		group   string
		roles   []Role
		guarded bool
	}{
		{"seller", []Role{Owner, Accountant}, false},
		{"contact", []Role{Owner, Accountant}, false},
		{"accounting", []Role{Owner, Accountant}, false},
		{"payment", []Role{Owner, Accountant}, false},
		{"bank", []Role{Owner}, true},
		{"provider", []Role{Owner}, true},
		{"live", []Role{Owner}, false},
	} {
		a, ok := SettingAction(tc.group)
		if !ok {
			t.Errorf("group %s: no action", tc.group)
			continue
		}
		for _, r := range Roles {
			want := false
			for _, x := range tc.roles {
				want = want || x == r
			}
			if got := Allows(r, a); got != want {
				t.Errorf("%s may change %s: %v, want %v", r, tc.group, got, want)
			}
		}
		if Guarded(tc.group) != tc.guarded {
			t.Errorf("Guarded(%s) = %v", tc.group, !tc.guarded)
		}
	}
	if _, ok := SettingAction("operator"); ok {
		t.Error("the operator's settings (rate limits) are changed in the console")
	}
}

func TestParseRole(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{{"owner", true}, {"developer", true}, {"accountant", true}, {"auditor", true}, {"Owner", false}, {"", false}, {"admin", false}} {
		_, err := ParseRole("role", tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("ParseRole(%q): err %v, want ok=%v", tc.in, err, tc.ok)
		}
	}
}

func TestTimeoutsExpired(t *testing.T) {
	to := Timeouts{Idle: 30 * time.Minute, Absolute: 12 * time.Hour}
	t0 := time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name          string
		created, seen time.Time
		now           time.Time
		expired       bool
	}{
		{"fresh", t0, t0, t0.Add(time.Minute), false},
		{"idle just within", t0, t0, t0.Add(30 * time.Minute), false},
		{"idle past", t0, t0, t0.Add(31 * time.Minute), true},
		{"active but too old", t0, t0.Add(12*time.Hour + 50*time.Minute), t0.Add(12*time.Hour + 55*time.Minute), true},
		{"active within absolute", t0, t0.Add(11 * time.Hour), t0.Add(11*time.Hour + 10*time.Minute), false},
	} {
		if got := to.Expired(tc.created, tc.seen, tc.now); got != tc.expired {
			t.Errorf("%s: Expired = %v, want %v", tc.name, got, tc.expired)
		}
	}
}

func TestAuditScope(t *testing.T) {
	end := time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		role  Role
		years []int
		end   *time.Time
		field string // "" = valid
	}{
		{Auditor, []int{2024}, &end, ""},
		{Auditor, nil, &end, "auditYears"},
		{Auditor, []int{24}, &end, "auditYears"},
		{Auditor, []int{2024}, nil, "endsOn"},
		{Owner, nil, nil, ""},
		{Accountant, []int{2024}, nil, "auditYears"},
	} {
		err := AuditScope(tc.role, tc.years, tc.end)
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s %v: %v", tc.role, tc.years, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s %v: err %v, want one naming %s", tc.role, tc.years, err, tc.field)
		}
	}
}

func TestMembershipActive(t *testing.T) {
	end := time.Date(2026, 6, 30, 0, 0, 0, 0, time.UTC)
	m := Membership{Role: Auditor, EndsOn: &end}
	if !m.Active(time.Date(2026, 6, 30, 23, 59, 0, 0, time.UTC)) {
		t.Error("an auditor's membership ends after its end date, not on it")
	}
	if m.Active(time.Date(2026, 7, 1, 0, 0, 1, 0, time.UTC)) {
		t.Error("an auditor's membership past its end date is in force")
	}
	if !(Membership{Role: Owner}).Active(time.Now()) {
		t.Error("a membership without end date is not in force")
	}
}

func TestPasswordHash(t *testing.T) {
	h, err := HashPassword("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h, "$argon2id$v=19$m=65536,t=3,p=2$") {
		t.Errorf("hash %q is not argon2id with the parameters", h)
	}
	if !VerifyPassword(h, "correct horse battery") {
		t.Error("the password does not verify")
	}
	if VerifyPassword(h, "correct horse batterY") || VerifyPassword(h, "") {
		t.Error("a wrong password verifies")
	}
	if VerifyPassword("$argon2id$v=19$m=1,t=1,p=1$AAAA$", "x") || VerifyPassword("plain", "plain") {
		t.Error("a malformed hash verifies")
	}
	h2, _ := HashPassword("correct horse battery")
	if h == h2 {
		t.Error("two hashes of one password are equal: no salt")
	}
	for _, tc := range []struct {
		pw string
		ok bool
	}{{"short", false}, {"twelve chars", true}, {"ääääääääääää", true}, {string(make([]byte, 300)), false}} {
		if err := CheckPassword("password", tc.pw); (err == nil) != tc.ok {
			t.Errorf("CheckPassword(%d bytes): %v, want ok=%v", len(tc.pw), err, tc.ok)
		}
	}
}
