/* frame_slots.c — the guard value and data pointer slots of hooked frames, off the C stack.
 *
 * Each hooked frame needs one value slot and one pointer slot per source of its entries, for
 * the whole call (guards fill them, the run reads them). They were arrays on the C stack
 * (768 bytes in dh_eval_frame, which a compiled recursion nests twice a level: with the rest
 * of a level, 3.12 reached 877 levels of eager's 997 before the real C stack's cap,
 * recursion.c) or, for frames with more sources, two callocs per call.
 *
 * Now a per-thread stack of slots in chunks that never move: a frame takes n slots on top and
 * gives them back when it returns (calls nest, so the last taken is the first given). A
 * chunk is kept for the next call; a thread's chunks are freed when it exits. Not
 * zero-filled (as the stack arrays were not): the guards write a slot before it is read.
 */
#include "dh_internal.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct slot_chunk {
    struct slot_chunk *prev;
    size_t cap, top;
    void *slot[];
} slot_chunk;

#define SLOT_CHUNK_MIN 2048 /* slots: 16 KB, a few hundred nested frames of small functions */

static _Thread_local slot_chunk *tl_top;
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static void free_chunks(void *p) {
    for (slot_chunk *c = p, *prev; c != NULL; c = prev) {
        prev = c->prev;
        free(c);
    }
}

static void make_key(void) { (void)pthread_key_create(&exit_key, free_chunks); }

void **dh_slots_take(size_t n, dh_slots_mark *m) {
    slot_chunk *c = tl_top;
    m->chunk = c;
    m->top = c ? c->top : 0;
    if (c == NULL || c->cap - c->top < n) {
        /* a fresh chunk on top (the one below keeps the slots of the frames under this one) */
        size_t cap = n > SLOT_CHUNK_MIN ? n : SLOT_CHUNK_MIN;
        slot_chunk *nc = malloc(sizeof *nc + cap * sizeof(void *));
        if (nc == NULL)
            return NULL;
        nc->prev = c;
        nc->cap = cap;
        nc->top = 0;
        if (c == NULL) {
            pthread_once(&exit_once, make_key);
            (void)pthread_setspecific(exit_key, nc);
        }
        tl_top = c = nc;
    }
    void **s = &c->slot[c->top];
    c->top += n;
    return s;
}

void dh_slots_give(const dh_slots_mark *m) {
    /* chunks taken on top of the mark's are freed, except the bottom one of the thread */
    while (tl_top != NULL && tl_top != m->chunk && tl_top->prev != NULL) {
        slot_chunk *up = tl_top;
        tl_top = up->prev;
        free(up);
    }
    if (tl_top == NULL)
        return;
    if (tl_top != m->chunk) { /* the first chunk of the thread, taken by this frame */
        tl_top->top = 0;
        return;
    }
    tl_top->top = m->top;
}
