/*-------------------------------------------------------------------------
 *
 * batchcols.c
 *	  Which columns of eoingest.batch() a job's transform reads.
 *
 * eoingest.batch() gives eleven columns per message, and some cost far
 * more than others: value_json parses the value, key_bytes and value_bytes
 * copy the message, the headers are built as jsonb twice.  When the call
 * comes from the transform's own statement, the columns its query tree
 * references are the only ones anything sees, so the others can stay NULL.
 *
 * The statement is recognized by its source text: the executor's EState
 * keeps the very string of the cached plan it runs, and a query run by a
 * function, a trigger, EXPLAIN's inner statement or query_to_xml() has a
 * string of its own.  The query tree is read as the executor's plan was
 * built from it (views expanded, rules applied).  Anything that would hide
 * a use of the function from this reading makes every column computed: a
 * whole-row reference, a call of batch() outside a FROM item of its own, a
 * utility statement, or a function or operator that is not built in (the
 * planner inlines SQL functions, so their bodies join the plan unseen).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "nodes/execnodes.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
#include "utils/plancache.h"

#include "api/batchcols.h"

typedef struct ReadColumns
{
	Oid			batch_fn;		/* eoingest.batch() */
	int			natts;			/* its columns */
	bool	   *read;			/* per column: referenced */
	List	   *queries;		/* the queries being walked, innermost first */
	int			calls;			/* calls of batch() seen */
	int			scans;			/* of which FROM items of their own */
	bool		all;			/* something hides what is read */
} ReadColumns;

static bool reads_walker(Node *node, void *context);

/* Is `rte` a FROM item that is a call of batch() alone? */
static bool
is_batch_scan(const RangeTblEntry *rte, const ReadColumns *rc)
{
	RangeTblFunction *rtfunc;

	if (rte->rtekind != RTE_FUNCTION || list_length(rte->functions) != 1)
		return false;
	rtfunc = linitial_node(RangeTblFunction, rte->functions);
	return IsA(rtfunc->funcexpr, FuncExpr) &&
		((FuncExpr *) rtfunc->funcexpr)->funcid == rc->batch_fn;
}

/* A function the planner could inline, or batch() called where it hides. */
static bool
hides_reads(Oid func, void *context)
{
	ReadColumns *rc = context;

	if (func == rc->batch_fn)
	{
		rc->calls++;
		return false;
	}
	return func >= FirstNormalObjectId;
}

/*
 * Column `attno` of range table entry `varno` of `query` is read: if that
 * entry is batch(), so is the column; through a join, what it aliases.
 */
static void
mark_read(Query *query, Index varno, AttrNumber attno, ReadColumns *rc)
{
	RangeTblEntry *rte;

	if (varno < 1 || varno > list_length(query->rtable))
		return;
	rte = rt_fetch(varno, query->rtable);
	if (is_batch_scan(rte, rc))
	{
		if (attno >= 1 && attno <= rc->natts)
			rc->read[attno - 1] = true;
		else if (!(rte->funcordinality && attno == rc->natts + 1))
			rc->all = true;		/* a whole-row reference */
	}
	else if (rte->rtekind == RTE_JOIN)
	{
		ListCell   *lc;
		int			i = 0;

		foreach(lc, rte->joinaliasvars)
		{
			Node	   *alias = lfirst(lc);

			i++;
			if (alias == NULL || (attno != 0 && attno != i))
				continue;
			if (IsA(alias, Var) && ((Var *) alias)->varlevelsup == 0)
				mark_read(query, ((Var *) alias)->varno, ((Var *) alias)->varattno, rc);
			else
				rc->all = true; /* a merged column of a FULL JOIN USING */
		}
	}
}

static void
note_var(const Var *var, ReadColumns *rc)
{
	if (var->varlevelsup >= list_length(rc->queries))
	{
		rc->all = true;
		return;
	}
	mark_read(list_nth(rc->queries, var->varlevelsup), var->varno, var->varattno, rc);
}

static bool
walk_query(Query *query, ReadColumns *rc)
{
	ListCell   *lc;
	bool		stop;

	if (query->commandType == CMD_UTILITY)
	{
		rc->all = true;
		return true;
	}
	foreach(lc, query->rtable)
		if (is_batch_scan(lfirst(lc), rc))
			rc->scans++;
	rc->queries = lcons(query, rc->queries);
	stop = query_tree_walker(query, reads_walker, rc, QTW_IGNORE_JOINALIASES);
	rc->queries = list_delete_first(rc->queries);
	return stop;
}

static bool
reads_walker(Node *node, void *context)
{
	ReadColumns *rc = context;

	if (node == NULL || rc->all)
		return rc->all;
	if (IsA(node, Var))
	{
		note_var((Var *) node, rc);
		return rc->all;
	}
	if (IsA(node, Query))
		return walk_query((Query *) node, rc);
	if (check_functions_in_node(node, hides_reads, rc))
	{
		rc->all = true;
		return true;
	}
	return expression_tree_walker(node, reads_walker, context);
}

/*
 * Fill read[0 .. natts - 1]: which columns of batch() (whose OID is
 * batch_fn) the set-returning call described by rsinfo must compute.  With
 * plan, the transform's: the columns its statement reads when the call is
 * that statement's; otherwise, every column.
 */
void
eoi_batch_columns_read(ReturnSetInfo *rsinfo, SPIPlanPtr plan, Oid batch_fn,
					   int natts, bool *read)
{
	EState	   *estate = rsinfo->econtext ? rsinfo->econtext->ecxt_estate : NULL;
	ReadColumns rc = {batch_fn, natts, read, NIL, 0, 0, false};
	CachedPlanSource *source = NULL;
	ListCell   *lc;

	memset(read, 0, sizeof(bool) * natts);
	if (plan != NULL && estate != NULL && estate->es_sourceText != NULL)
	{
		foreach(lc, SPI_plan_get_plan_sources(plan))
			if (((CachedPlanSource *) lfirst(lc))->query_string == estate->es_sourceText)
				source = lfirst(lc);
	}
	if (source == NULL || !source->is_valid)
		rc.all = true;
	else
		foreach(lc, source->query_list)
			if (walk_query(lfirst_node(Query, lc), &rc))
				break;
	if (rc.all || rc.calls != rc.scans)
		memset(read, true, sizeof(bool) * natts);
}
