/* cuda_state.c — what the CUDA backend's family operations need of its state
 * (cuda_state.h): the current stream, the GEMMs' types, the families' slots, and
 * scratch that grows on first use. */
#include "backend/cuda/cuda_state.h"

#include "backend/backend.h"
#include "base/cuda_check.h"
#include "base/error.h"

static struct cuda_state *state(struct backend *b) { return b->impl; }

cudaStream_t cuda_state_stream(struct backend *b) { return state(b)->cur; }
cublasComputeType_t cuda_state_compute_type(struct backend *b) { return state(b)->compute; }
cudaDataType_t cuda_state_ab_type(struct backend *b) { return state(b)->ab_type; }
struct cuda_family_slot *cuda_state_family(struct backend *b, const void *key)
{
    struct cuda_family_slot *slots = state(b)->family;
    for (int i = 0; i < CUDA_FAMILY_SLOTS; i++) {
        if (slots[i].key == key) return &slots[i];
        if (slots[i].key == NULL) {
            slots[i].key = key;
            return &slots[i];
        }
    }
    DP_FATAL("raise CUDA_FAMILY_SLOTS in src/backend/cuda/cuda_state.h", "more than %d model families keep state on the GPU",
             CUDA_FAMILY_SLOTS);
}

void cuda_state_release_families(struct backend *b)
{
    for (int i = 0; i < CUDA_FAMILY_SLOTS; i++) {
        struct cuda_family_slot *slot = &state(b)->family[i];
        if (slot->state != NULL) slot->release(b, slot->state);
        slot->state = NULL;
        slot->key = NULL;
    }
}

void *cuda_state_grow(struct backend *b, void **buf, size_t *have, size_t need)
{
    if (need > *have) {
        CHECK_CUDA(cudaStreamSynchronize(state(b)->cur));
        if (*buf != NULL) b->ops->free(b, *buf);
        *buf = b->ops->alloc(b, need);
        *have = need;
    }
    return *buf;
}
