/*
 * data.pml - the translation of a recorded registration's events (src/krec.c,
 * DATA), for spin.
 *
 * One record, registered in the kernel epoll with its tag as part of the
 * data.  A ctl thread changes the registration several times (MOD with new
 * user data, DEL, ADD again: krec__retag, the fields, then the kernel call
 * that makes the kernel hand out the new tag); harvests take an event from
 * the kernel at any moment (the tag the kernel has then, and the user data
 * of that registration: what the kernel itself would have returned), and
 * translate it later without a lock (krec_of: tag, fields, tag; drop the
 * event unless both equal the event's tag).  Checked:
 *  - no event is ever returned with data other than that of the
 *    registration the kernel gave it for (never another registration's,
 *    never a record's address: a free record has data NONE).
 * (Events are returned in some runs: each mutant's counterexample is one.)
 * Each statement is one atomic step; the writer's release fence after the
 * tag and the reader's acquire fence before its re-read make the tag and
 * fields sequentially ordered, which is spin's model.  Mutants that
 * models/check.sh requires to fail:
 *   MUTANT_FIELDS_AFTER_CALL  the fields are stored after the kernel call;
 *   MUTANT_NO_RETAG           MOD keeps the tag;
 *   MUTANT_NO_REREAD          the reader checks the tag only once, before
 *                             the fields.
 */
#define NONE 0
#define OPS 3

byte tag;		/* the record's tag */
byte data;		/* the record's user data (NONE: free) */
byte ktag;		/* the tag in the kernel's registration (0: none) */
byte kdata;		/* what the kernel would return: the user data of the
			 * registration it has */
bit regd;		/* the kernel has a registration */
byte done;

/* krec__retag and the fields, then the kernel call. */
inline change(newdata) {
#ifdef MUTANT_FIELDS_AFTER_CALL
	atomic { ktag = tag; kdata = newdata; regd = (newdata != NONE) };
	tag++;
	data = newdata
#else
	tag++;
	data = newdata;
	atomic { ktag = tag; kdata = newdata; regd = (newdata != NONE) }
#endif
}

proctype ctl()
{
	/* ADD data 1 */
	change(1);
	/* MOD data 2 */
#ifdef MUTANT_NO_RETAG
	data = 2;
	atomic { ktag = tag; kdata = 2 };
#else
	change(2);
#endif
	/* DEL: the kernel call first, then the record is freed */
	atomic { regd = 0; ktag = 0; kdata = NONE };
	tag++;
	data = NONE;
	/* ADD again (record reused) data 3 */
	change(3);
	atomic { done++ }
}

proctype harvest()
{
	byte etag, edata, t1, t2, d;
	byte n = 0;

	do
	:: n < OPS ->
		n++;
		/* The kernel hands out an event of the registration it has. */
		atomic {
			if
			:: regd -> etag = ktag; edata = kdata
			:: else -> etag = 0
			fi
		}
		if
		:: etag != 0 ->
			/* krec_of */
			t1 = tag;
			d = data;
#ifdef MUTANT_NO_REREAD
			t2 = t1;
#else
			t2 = tag;
#endif
			if
			:: t1 == etag && t2 == etag ->
				assert(d == edata && d != NONE)
			:: else -> skip /* dropped: that registration is gone */
			fi
		:: else
		fi
	:: else -> break
	od;
	atomic { done++ }
}

init
{
	atomic {
		run ctl();
		run harvest();
		run harvest()
	}
	done == 3
}
