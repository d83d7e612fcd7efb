/* test_backend_tables.c — every backend this binary has exports complete family tables:
 * the CPU's, and the CUDA backend's where it is built (its tables are linked here, and
 * read, never called: no GPU is needed). A family's model refuses a partial table, so
 * an entry left out would refuse the model on that backend. */
#include "backend/backend.h"
#include "backend/rn_ops.h"
#include "backend/tf_ops.h"
#ifdef DPSCALE_HAVE_CUDA
#include "backend/cuda/resnet_cuda.h"
#include "backend/cuda/transformer_cuda.h"
#endif
#include "check.h"

TEST(the_cpu_tables_are_complete)
{
    CHECK(tf_ops_complete(&cpu_tf_ops));
    CHECK(rn_ops_complete(&cpu_rn_ops));
    CHECK(!tf_ops_complete(NULL));
    CHECK(!rn_ops_complete(NULL));
}

TEST(a_table_with_one_entry_missing_is_not_complete)
{
    struct tf_ops tf = cpu_tf_ops;
    tf.scatter_rows = NULL;
    CHECK(!tf_ops_complete(&tf));
    struct rn_ops rn = cpu_rn_ops;
    rn.synth_images = NULL;
    CHECK(!rn_ops_complete(&rn));
}

#ifdef DPSCALE_HAVE_CUDA
TEST(the_cuda_tables_are_complete)
{
    CHECK(tf_ops_complete(&cuda_tf_ops));
    CHECK(rn_ops_complete(&cuda_rn_ops));
    CHECK(cuda_tf_ops.flash_attention_ok != NULL && cuda_tf_ops.flash_attention_forward != NULL &&
          cuda_tf_ops.flash_attention_backward != NULL); /* the fused attention runs on CUDA */
}
#endif

int main(void) { return test_main("backend_tables"); }
