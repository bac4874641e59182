package store

// GenericPlans is a select-list item that makes the statements after it in
// its transaction (an explicit one, or a pipeline's implicit one) run on
// their prepared statement's generic plan, never on a new custom plan; the
// pooled connection keeps the server's choice for everything else.
//
// For a statement whose custom plans always look cheaper than its generic
// one, though they are the same plan, PostgreSQL plans anew at every
// execution: a lookup by an array of keys (= ANY($1), unnest($1)), whose
// generic plan assumes ten keys where the custom plan counts two. For those
// statements, planning costs more than running.
//
// Only for statements whose plan does not depend on their parameters' values.
const GenericPlans = "set_config('plan_cache_mode', 'force_generic_plan', true)"
