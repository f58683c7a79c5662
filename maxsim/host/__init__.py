"""The host side of a launch: load a kernel, bind its parameters, buffers and textures, launch it,
and get back the outputs, the timed SM and the whole-GPU prediction (:func:`launch`)."""

from .args import Buffer, Texture, bind
from .kernel import Kernel, KernelParam
from .launch import LaunchReport, Prediction, Sampling, launch, predict_gpu

__all__ = ["Kernel", "KernelParam", "Buffer", "Texture", "bind", "launch", "LaunchReport", "Prediction",
           "Sampling", "predict_gpu"]
