/*
 * compact.pml - COMPACT (src/readyq.c): rq_retire unlinks the DEAD items
 * of the ready queue in place (rq__raw_compact) while producers enqueue
 * without a lock, for spin.
 *
 * The queue is liburcu's wfcqueue, modelled node by node: the shared queue
 * (whead/wtail) where producers exchange the tail and store the old tail's
 * next one step later, and the consumers' batch (txhead/txtail) that a
 * splice moves it into.  NPROD producers each queue one item (rq_enqueue:
 * the state CAS, then the tail exchange, then the delayed link store).
 * One consumer process stands for every holder of q->lock (harvests,
 * retires, compactions are serialised by it; only the producers run
 * beside them): in any order and any number of times it retires a QUEUED
 * item (marks it DEAD; that may be a producer's item whose link is not
 * stored yet, or whose exchange is not made yet: the CAS comes first),
 * splices, dequeues one item (a harvest, which frees a DEAD one), or
 * compacts (splice, then the walk); once every producer is done it
 * harvests everything.  Checked:
 *  - no freed node is reached: nobody reads the next of, or stores a link
 *    into, a node a compaction (or harvest) freed; a producer's late
 *    `old->next = node` lands on a node still in the queue;
 *  - after each consumer step, with the links producers have still to
 *    store counted in: the shared queue's chain ends at wtail, the batch's
 *    at txtail (the batch tail is the last node), no node is in a chain
 *    twice, and every item exchanged in and not taken out (dequeued or
 *    compacted) is in one of them (no node lost);
 *  - every dequeue is in the order of the tail exchanges (queue order),
 *    and every item is dequeued at most once;
 *  - a compaction unlinks every DEAD item it can (the purpose: a queue
 *    nobody harvests stays bounded): each one that was, when it began,
 *    reachable through stored links from the batch or (the batch fully
 *    linked) from the shared queue, with its own next stored;
 *  - at the end every live item has been harvested once and every DEAD
 *    one freed once, and both queues are empty.
 * Each step is one atomic step of the C code, named beside it; the walk's
 * iteration is one step (its only load that races a producer is n->next).
 *
 * models/check.sh runs it and each mutant, which must fail (C twins in
 * tests/mutations/compact.txt):
 *   MUTANT_NO_PENDING_STOP  the walk does not stop at a node whose next is
 *                           NULL and that is not the tail: a DEAD one is
 *                           freed though a producer has still to store its
 *                           next (twin compact.NO_PENDING_STOP: NONE, a
 *                           cross-thread window)
 *   MUTANT_STALE_TAIL       unlinking the batch's tail leaves txtail on the
 *                           freed node: the next splice links behind it
 *                           (twin compact.STALE_TAIL, formerly extra.txt's
 *                           COMPACT_STALE_TAIL)
 *   MUTANT_DROPS_LIVE       the walk does not advance prev past a live
 *                           item: unlinking the next DEAD one drops it
 *                           (twin compact.DROPS_LIVE, formerly extra.txt's
 *                           COMPACT_DROPS_LIVE)
 *   MUTANT_NO_SPLICE        rq_retire compacts without splicing first: the
 *                           DEAD items in the shared queue (all of them,
 *                           when nobody harvests) are never unlinked (twin
 *                           compact.NO_SPLICE)
 * (extra.txt's COMPACT_NEVER, the trigger, is not modelled: a compaction
 * may happen at any step here.)
 */
#define NPROD 3

#define NIL 0		/* NULL */
#define WH  1		/* &q->whead.node */
#define TH  2		/* &q->txhead.node */
#define FIRST 3		/* the items' nodes: FIRST .. LAST */
#define LAST  (FIRST + NPROD - 1)
#define NN    (LAST + 1)

#define IDLE   0
#define QUEUED 1
#define DEAD   2

byte next[NN];		/* node->next */
byte wtail = WH;	/* q->wtail.p */
byte txtail = TH;	/* q->txtail.p */
byte state[NN];		/* item->state */
byte done;		/* producers that have returned */

/* Ghosts. */
byte pend[NN];		/* pend[old]: the node a producer will link behind old */
byte ord[NN];		/* its tail exchange's rank (0: not exchanged) */
byte seq;		/* tail exchanges so far */
byte lastord;		/* rank of the last node dequeued */
bool freed[NN];
bool taken[NN];		/* dequeued live (delivered) */
bool want[NN];		/* this compaction must free it */
bool inq[NN];		/* scratch of check() */
byte g, c;		/* scratch of check() and wanted() */

/* In a queue: a node (or a head) whose next a producer may store. */
#define INQUEUE(x) ((x) == WH || (!freed[x] && !taken[x] && ord[x] != 0))
/* The link a node has, or will have once its producer stores it. */
#define LNEXT(x) (next[x] != NIL -> next[x] : pend[x])

proctype producer(byte it)
{
	byte old;

	/* rq__claim: CAS IDLE->QUEUED (its only enqueue: it wins) */
	atomic { assert(state[it] == IDLE); state[it] = QUEUED };
	/* cds_wfcq_enqueue: old = uatomic_xchg(&tail->p, node) (the node's
	 * next is NULL: cds_wfcq_node_init) */
	atomic {
		old = wtail; wtail = it;
		assert(INQUEUE(old) && pend[old] == NIL);
		seq++; ord[it] = seq; pend[old] = it
	};
	/* CMM_STORE_SHARED(old->next, node): the late link */
	atomic {
		assert(INQUEUE(old));	/* never into a freed node */
		next[old] = it; pend[old] = NIL; old = 0
	};
	done++
}

/* After each consumer step (q->lock dropped): both chains, with the links
 * still to store, end at their tails and hold every item in a queue. */
inline check() {
	d_step {
		g = WH; c = 0;
		do
		:: LNEXT(g) != NIL && c < NN ->
			g = LNEXT(g); c++;
			assert(!freed[g] && !taken[g] && !inq[g]); inq[g] = 1
		:: else -> break
		od;
		assert(g == wtail);	/* the shared queue's tail is its last */
		g = TH; c = 0;
		do
		:: LNEXT(g) != NIL && c < NN ->
			g = LNEXT(g); c++;
			assert(!freed[g] && !taken[g] && !inq[g]); inq[g] = 1
		:: else -> break
		od;
		assert(g == txtail);	/* the batch's tail is its last */
		g = FIRST;
		do
		:: g <= LAST ->
			/* in a chain iff exchanged in and not taken out */
			assert(inq[g] == (ord[g] != 0 && !freed[g] && !taken[g]));
			inq[g] = 0; g++
		:: else -> break
		od;
		g = 0; c = 0
	}
}

/* Before a compaction: the DEAD items it must unlink. */
inline wanted() {
	d_step {
		g = TH; c = 0;
		do
		:: next[g] != NIL && c < NN ->
			g = next[g]; c++;
			want[g] = (state[g] == DEAD && (next[g] != NIL || g == txtail))
		:: else -> break
		od;
		if
		:: g == txtail ->	/* the batch is linked through: then the queue's */
			g = WH; c = 0;
			do
			:: next[g] != NIL && c < NN ->
				g = next[g]; c++;
				want[g] = (state[g] == DEAD && next[g] != NIL)
			:: else -> break
			od
		:: else -> skip
		fi;
		g = 0; c = 0
	}
}

inline unwanted() {
	d_step {
		g = FIRST;
		do
		:: g <= LAST -> assert(!want[g] || freed[g]); want[g] = 0; g++
		:: else -> break
		od;
		g = 0
	}
}

/* A dequeued node, in queue order: a DEAD one is freed, a live one
 * delivered (and not queued again: each producer queues once). */
inline take(x) {
	assert(ord[x] > lastord); lastord = ord[x];
	assert(!freed[x] && !taken[x]);
	if
	:: state[x] == DEAD -> freed[x] = 1
	:: else -> assert(state[x] == QUEUED); state[x] = IDLE; taken[x] = 1
	fi
}

/* rq__raw_splice: __cds_wfcq_splice_nonblocking(txhead, txtail, whead,
 * wtail). */
inline splice() {
	if
	:: next[WH] == NIL && wtail == WH -> skip	/* _cds_wfcq_empty */
	:: else ->
		/* head = uatomic_xchg(&src_q_head->node.next, NULL) */
		atomic { h = next[WH]; next[WH] = NIL };
		if
		:: h != NIL ->
			/* tail = uatomic_xchg(&src_q_tail->p, &src_q_head->node) */
			atomic { t = wtail; wtail = WH };
			/* ___cds_wfcq_append: old_tail = xchg(&txtail.p, tail);
			 * old_tail->next = head (ours: q->lock) */
			atomic {
				assert(!freed[txtail] && !taken[txtail]);
				next[txtail] = h; txtail = t
			}
		:: else -> skip	/* empty, or WOULDBLOCK: whead's link pending */
		fi
	fi;
	h = 0; t = 0
}

/* rq__raw_dequeue: __cds_wfcq_dequeue_nonblocking(txhead, txtail). */
inline dequeue() {
	if
	:: next[TH] == NIL && txtail == TH -> skip	/* _cds_wfcq_empty */
	:: else ->
		n = next[TH];	/* ___cds_wfcq_node_sync_next(&head->node) */
		if
		:: n == NIL -> skip	/* WOULDBLOCK */
		:: else ->
			/* next = CMM_LOAD_SHARED(node->next) */
			atomic { assert(!freed[n] && !taken[n]); nx = next[n] };
			if
			:: nx == NIL ->
				/* _cds_wfcq_node_init(&head->node);
				 * cmpxchg(&tail->p, node, &head->node) */
				next[TH] = NIL;
				if
				:: txtail == n -> txtail = TH
				:: else ->
					/* ___cds_wfcq_node_sync_next(node) */
					atomic { assert(!freed[n]); nx = next[n] };
					if
					:: nx == NIL -> next[TH] = n; n = NIL	/* WOULDBLOCK */
					:: else -> next[TH] = nx
					fi
				fi
			:: else -> next[TH] = nx	/* head->node.next = next */
			fi;
			if
			:: n != NIL -> take(n)
			:: else -> skip
			fi
		fi
	fi;
	n = 0; nx = 0
}

/* rq_retire's compaction, q->lock held: rq__raw_splice, then
 * rq__raw_compact. */
inline compact() {
	wanted();
#ifndef MUTANT_NO_SPLICE
	splice();
#endif
	/* prev = &q->txhead.node; n = CMM_LOAD_SHARED(prev->next) */
	atomic { prev = TH; n = next[TH] };
	do
	:: n == NIL -> break
	:: else ->
		atomic {
			assert(!freed[n] && !taken[n]);	/* never a freed node */
			tl = (n == txtail);		/* tail = n == q->txtail.p */
			nx = next[n];			/* CMM_LOAD_SHARED(n->next) */
#ifndef MUTANT_NO_PENDING_STOP
			if
			:: nx == NIL && !tl -> n = NIL	/* pending link: break */
			:: else -> skip
			fi;
#endif
			if
			:: n == NIL -> skip
			:: n != NIL && state[n] != DEAD ->	/* live: kept */
#ifndef MUTANT_DROPS_LIVE
				prev = n;
#endif
				n = nx
			:: n != NIL && state[n] == DEAD ->
				/* CMM_STORE_SHARED(prev->next, next) */
				assert(!freed[prev] && !taken[prev]);
				next[prev] = nx;
#ifndef MUTANT_STALE_TAIL
				if
				:: tl -> txtail = prev	/* q->txtail.p = prev */
				:: else -> skip
				fi;
#endif
				freed[n] = 1;		/* obj_free_later(it) */
				n = nx
			fi
		}
	od;
	unwanted();
	prev = 0; n = 0; nx = 0; tl = 0
}

proctype consumer()
{
	byte h, t, n, nx, prev, k;
	bool tl;

	do
	:: done == NPROD -> break
	:: atomic {	/* rq_retire of a QUEUED item: DEAD */
		k = FIRST;
		do
		:: k < LAST -> k++
		:: break
		od;
		if
		:: state[k] == QUEUED -> state[k] = DEAD
		:: else -> skip
		fi;
		k = 0
	   };
		check()
	:: true -> splice(); check()	/* a harvest's (or rq_any_ready's) splice */
	:: true -> dequeue(); check()	/* a harvest's dequeue */
	:: true -> compact(); check()	/* rq_retire's compaction */
	od;
	/* Everything harvested at the end (every link stored by now). */
	do
	:: next[WH] != NIL || wtail != WH || next[TH] != NIL || txtail != TH ->
		splice(); dequeue(); check()
	:: else -> break
	od;
	k = FIRST;
	do
	:: k <= LAST ->
		assert((state[k] == DEAD && freed[k] && !taken[k]) ||
		       (state[k] == IDLE && taken[k] && !freed[k]));
		k++
	:: else -> break
	od
}

init
{
	atomic {
		byte i;
		for (i : FIRST .. LAST) { run producer(i) }
		run consumer()
	}
}
