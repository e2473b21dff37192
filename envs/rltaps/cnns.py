"""RL-TAPS's CNN table (003 §4.6.2): model complexity and gradient size of 35 CNNs.

003 gives every job the model complexity (FLOPs of one forward pass on
one example, ``d_ex``) and gradient size (the memory of all parameters) of one of 35 CNNs
taken from ``albanie/convnet-burden`` (Albanie, 2017-2020, its ref. [12]). The numbers below
are that repository's: the 31 models of its README tables (image classification,
detection, segmentation, keypoints: "param memory" and "flops" for a single-element batch,
4-byte floats, a fused multiply-add counted as one operation) and the four DenseNets of its
``reports/densenet*.md`` pages, which make 35. They are the README's rounded values, as
003 uses them (Appendix A's vgg-vd-19 is "20 x 10^9 FLOPs").
"""

from __future__ import annotations

import numpy as np

#: (name, forward GFLOPs per example, parameter memory = gradient MB) from
#: github.com/albanie/convnet-burden (README tables; DenseNets from reports/densenet*.md).
CNN_TABLE: tuple[tuple[str, float, float], ...] = (
    # image classification
    ("alexnet", 0.727, 233.0),
    ("caffenet", 0.724, 233.0),
    ("squeezenet1-0", 0.837, 5.0),
    ("squeezenet1-1", 0.360, 5.0),
    ("vgg-f", 0.727, 232.0),
    ("vgg-m", 2.0, 393.0),
    ("vgg-s", 3.0, 393.0),
    ("vgg-m-2048", 2.0, 353.0),
    ("vgg-m-1024", 2.0, 333.0),
    ("vgg-m-128", 2.0, 315.0),
    ("vgg-vd-16-atrous", 16.0, 82.0),
    ("vgg-vd-16", 16.0, 528.0),
    ("vgg-vd-19", 20.0, 548.0),
    ("googlenet", 2.0, 51.0),
    ("inception-v3", 6.0, 91.0),
    ("resnet-50", 4.0, 98.0),
    ("resnet-101", 8.0, 170.0),
    ("resnet-152", 11.0, 230.0),
    ("resnext-50-32x4d", 4.0, 96.0),
    ("resnext-101-32x4d", 8.0, 169.0),
    ("resnext-101-64x4d", 16.0, 319.0),
    ("densenet121", 3.0, 31.0),
    ("densenet161", 8.0, 110.0),
    ("densenet169", 3.0, 55.0),
    ("densenet201", 4.0, 77.0),
    # object detection
    ("rfcn-res50-pascal", 79.0, 122.0),
    ("rfcn-res101-pascal", 117.0, 194.0),
    ("ssd-pascal-vggvd-300", 31.0, 100.0),
    ("ssd-pascal-vggvd-512", 91.0, 104.0),
    ("faster-rcnn-vggvd-pascal", 172.0, 523.0),
    # semantic segmentation
    ("pascal-fcn32s", 125.0, 519.0),
    ("pascal-fcn16s", 125.0, 514.0),
    ("pascal-fcn8s", 125.0, 513.0),
    # keypoint detection
    ("multipose-mpi", 134.0, 196.0),
    ("multipose-coco", 136.0, 200.0),
)

#: The CNN names, in table order.
CNN_NAMES: tuple[str, ...] = tuple(name for name, _, _ in CNN_TABLE)

#: FLOPs of one forward pass on one example (003's d_ex), by table index.
CNN_EXAMPLE_FLOPS: np.ndarray = np.array([gflops * 1e9 for _, gflops, _ in CNN_TABLE])
CNN_EXAMPLE_FLOPS.flags.writeable = False

#: Gradient size in MB (the parameters' memory), by table index.
CNN_GRADIENT_MB: np.ndarray = np.array([megabytes for _, _, megabytes in CNN_TABLE])
CNN_GRADIENT_MB.flags.writeable = False
