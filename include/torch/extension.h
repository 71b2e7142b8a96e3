// torch/extension.h: the same API as torch/torch.h (the name many custom-op sources use).
#pragma once

#include <torch/torch.h>


