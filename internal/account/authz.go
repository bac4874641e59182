package account

// Role is a member's role in one project.
type Role string

// The roles of a project's members.
const (
	Owner      Role = "owner"      // everything, members included
	Developer  Role = "developer"  // keys, API activity, provider connection, test data
	Accountant Role = "accountant" // orders, invoices, tasks, exports, seller data
	Auditor    Role = "auditor"    // read-only: invoices, archive listing, verify, export
)

// Roles lists the roles, most rights first.
var Roles = []Role{Owner, Developer, Accountant, Auditor}

// ParseRole checks a role name, naming the field of a bad one.
func ParseRole(field, s string) (Role, error) {
	for _, r := range Roles {
		if string(r) == s {
			return r, nil
		}
	}
	return "", fieldErr(field, "role must be one of owner, developer, accountant, auditor, got %q", s)
}

// Action is one thing a member may do in the console: viewing a page or
// changing something.
type Action string

// The console's actions. Every page and every form names one.
const (
	ViewProject    Action = "project.view"    // the project's overview
	ViewKeys       Action = "keys.view"       // the API keys listing
	ManageKeys     Action = "keys.manage"     // create, revoke, rotate keys
	ViewActivity   Action = "activity.view"   // API activity
	ViewMembers    Action = "members.view"    // the members listing
	ManageMembers  Action = "members.manage"  // invite, change role, remove
	ViewTasks      Action = "tasks.view"      // review tasks
	ActOnTasks     Action = "tasks.act"       // dismiss, retry
	ViewOrders     Action = "orders.view"     // orders and their timelines
	ViewInvoices   Action = "invoices.view"   // invoices, credit notes, PDF/XML
	ViewArchive    Action = "archive.view"    // archive listing, verify, export
	Export         Action = "exports.run"     // DATEV, OSS, EC sales list
	EditSeller     Action = "settings.seller" // seller data, contact, accounting, payment term
	EditBank       Action = "settings.bank"   // the payee account (owners, with the password again)
	EditProvider   Action = "settings.provider"
	ViewSettings   Action = "settings.view"
	GoLive         Action = "settings.live"
	ResetTestData  Action = "testdata.reset"
	ViewAuditLog   Action = "audit.view" // the console's change log
	SwitchTestMode Action = "testmode.switch"
	RequireTOTP    Action = "security.totp" // require a second factor of the project's members
)

// Actions lists every action, in the order of the README's table.
var Actions = []Action{ViewProject, ViewKeys, ManageKeys, ViewActivity, ViewMembers, ManageMembers, ViewTasks, ActOnTasks,
	ViewOrders, ViewInvoices, ViewArchive, Export, ViewSettings, EditSeller, EditBank, EditProvider, GoLive,
	ResetTestData, SwitchTestMode, ViewAuditLog, RequireTOTP}

// allowed is the role × action table: what each role other than the owner
// may do. An owner may do everything.
var allowed = map[Role]map[Action]bool{
	Developer: {ViewProject: true, ViewKeys: true, ManageKeys: true, ViewActivity: true,
		ResetTestData: true, SwitchTestMode: true, ViewSettings: true},
	Accountant: {ViewProject: true, ViewTasks: true, ActOnTasks: true, ViewOrders: true, ViewInvoices: true,
		Export: true, ViewSettings: true, EditSeller: true, SwitchTestMode: true},
	Auditor: {ViewProject: true, ViewInvoices: true, ViewArchive: true, Export: true},
}

// Allows reports whether a member of role may do action. Unknown roles may
// do nothing.
func Allows(role Role, action Action) bool {
	if role == Owner {
		return true
	}
	return allowed[role][action]
}

// settingActions is the role × setting table: the action each group of
// settings (internal/project's groups, by name) needs.
var settingActions = map[string]Action{
	"seller":     EditSeller,
	"contact":    EditSeller,
	"accounting": EditSeller,
	"payment":    EditSeller,
	"bank":       EditBank,
	"provider":   EditProvider,
	"live":       GoLive,
}

// SettingAction returns the action that changing a group of settings
// needs; false for a group the console does not change.
func SettingAction(group string) (Action, bool) {
	a, ok := settingActions[group]
	return a, ok
}

// Guarded reports whether changing a group of settings needs the password
// again (and the second factor when on) and is e-mailed to every owner: the
// payee account and the payment provider's connection, whose change is how
// payments are diverted.
func Guarded(group string) bool { return group == "bank" || group == "provider" }
