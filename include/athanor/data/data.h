// The data layer in one include: datasets, samplers, the DataLoader, transforms, and the
// Fashion-MNIST / text / CSV datasets. See docs/data.md.
#pragma once

#include "athanor/data/batch.h"
#include "athanor/data/batch_source.h"
#include "athanor/data/collate.h"
#include "athanor/data/csv_dataset.h"
#include "athanor/data/data_loader.h"
#include "athanor/data/dataset.h"
#include "athanor/data/mnist.h"
#include "athanor/data/sample_generator.h"
#include "athanor/data/sampler.h"
#include "athanor/data/subset.h"
#include "athanor/data/tensor_dataset.h"
#include "athanor/data/text_bytes.h"
#include "athanor/data/transform_dataset.h"
#include "athanor/data/transforms.h"
