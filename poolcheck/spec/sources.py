"""The spec sentences poolcheck relies on, each quoted once, by id.

Everything else -- the severity rules, docstrings, C comments, the reproducer scripts and the
severity table in docs/severity.md -- cites a sentence by its id (``OV-PAD-NEG-INF``) and looks
the words up here. A sentence is kept verbatim (typos and all) from the document it names:

- the seed documents (``seeds/<file>``: the OpenVINO shape-rules page, the OpenVINO MaxPool-8
  page and the ONNX AveragePool-19 page; tests/data/seeds holds verbatim copies);
- the ONNX operator schemas as the ``onnx`` package ships them (``onnx:<Op>-<version>``: the
  attribute and output descriptions and the operator's doc text of ``onnx.defs.get_schema``);
- the OpenVINO Python API's opset14 docstrings (``openvino:opset14.<function>``) where the
  seed documents say nothing about an OpenVINO operator (AvgPool-14's ``exclude_pad``).

``tests/engines/test_spec_sources.py`` checks that every sentence occurs word for word (whitespace
folded) in each place it names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Document:
    """One source document: a title for people and the places its text is read from."""

    id: str
    title: str
    #: The operator versions (catalogue names) whose text this is.
    operators: tuple[str, ...]


@dataclass(frozen=True)
class Sentence:
    """One quoted sentence (or formula) of a document."""

    id: str
    document: str  # a Document id
    #: Where the words are, machine-readable: ``seeds/<file>``, ``onnx:<Op>-<v>[:<attribute>]``
    #: (the operator's doc text, or one attribute's / output's description), or
    #: ``openvino:opset14.<function>`` (its docstring). One place per listed location.
    locations: tuple[str, ...]
    text: str
    #: What the words are, when they are not a sentence of prose (an example's output, a formula).
    note: str = ""


DOCUMENTS: dict[str, Document] = {d.id: d for d in (
    Document("ov-shape-rules", "OpenVINO Shape Calculation Rules for Pooling Operators",
             ("MaxPool-8", "MaxPool-14", "AvgPool-14")),
    Document("ov-maxpool-8", "OpenVINO MaxPool-8 operation specification", ("MaxPool-8", "MaxPool-14")),
    Document("ov-opset14-api", "OpenVINO Python API, openvino.opset14 (max_pool, avg_pool docstrings)",
             ("MaxPool-14", "AvgPool-14")),
    Document("onnx-averagepool-19", "ONNX AveragePool, version 19", ("AveragePool-19",)),
    Document("onnx-schema", "ONNX operator schemas MaxPool-22 and AveragePool-19/22 (onnx package)",
             ("MaxPool-22", "AveragePool-19", "AveragePool-22")),
    Document("onnx-family-schema", "ONNX operator schemas LpPool-22, GlobalLpPool-22 and MaxUnpool-22 (onnx package)",
             ("LpPool-22", "GlobalLpPool-22", "MaxUnpool-22")),
    Document("onnx-old-schema", "ONNX operator schemas of older versions: LpPool-2, MaxPool-8/10, AveragePool-7/10 "
             "(onnx package)", ("LpPool-2", "onnx:MaxPool-8", "MaxPool-10", "AveragePool-7", "AveragePool-10")),
    Document("ov-adaptive-8", "OpenVINO AdaptiveAvgPool-8 / AdaptiveMaxPool-8 operation specifications (as the "
             "catalogue rows quote them)", ("AdaptiveAvgPool-8", "AdaptiveMaxPool-8")),
)}

_SHAPES = ("seeds/000_4f109fca0e18ec5f.txt",)
_MAXPOOL8 = ("seeds/001_59f5ff4d74cea6aa.txt",)
_AVG19 = ("seeds/004_509d0c367cfe146b.txt", "onnx:AveragePool-19", "onnx:AveragePool-22")
_ONNX_DOC = ("onnx:MaxPool-22",) + _AVG19


def _onnx_attr(name: str, ops: tuple[str, ...] = ("MaxPool-22", "AveragePool-19", "AveragePool-22")) -> tuple[str, ...]:
    return tuple(f"onnx:{op}:{name}" for op in ops)


SENTENCES: dict[str, Sentence] = {s.id: s for s in (
    # ---------------------------------------------------------------- OpenVINO: shapes
    Sentence("OV-SHAPE-FLOOR", "ov-shape-rules", _SHAPES,
             "H_out = floor((H + pads_begin[0] + pads_end[0] - ((kernel[0] - 1) * dilations[0] + 1)) / strides[0] + 1)",
             "the formula for auto_pad = explicit and rounding_type = floor"),
    Sentence("OV-SHAPE-CEIL", "ov-shape-rules", _SHAPES,
             "H_out = ceil((H + pads_begin[0] + pads_end[0] - ((kernel[0] - 1) * dilations[0] + 1)) / strides[0] + 1)",
             "the formula for auto_pad = explicit and rounding_type = ceil"),
    Sentence("OV-SHAPE-VALID", "ov-shape-rules", _SHAPES,
             "H_out = ceil((H - ((kernel[0] - 1) * dilations[0] + 1) + 1) / strides[0])",
             "the formula for auto_pad = valid"),
    Sentence("OV-SHAPE-SAME", "ov-shape-rules", _SHAPES, "H_out = H W_out = W D_out = D",
             "the formula for auto_pad = same_upper / same_lower (it ignores the stride; poolcheck records it "
             "as an erratum, ov-shape-rules cases)"),
    Sentence("OV-SHAPE-ROUNDED", "ov-shape-rules", _SHAPES,
             "If H + pads_begin[i] + pads_end[i] - kernel[i] is not divisible by strides[i] evenly, the result is "
             "rounded with respect to the rounding_type attribute."),
    Sentence("OV-CEIL-TORCH", "ov-shape-rules", _SHAPES,
             "If rounding_type is set to ceil_torch, the last pooling operation within a dimension cannot start in "
             "the padding area. If this is the case, the respective dimension is reduced by 1."),
    # ---------------------------------------------------------------- OpenVINO MaxPool-8
    Sentence("OV-PAD-INF", "ov-maxpool-8", _MAXPOOL8,
             "If paddings are used, during the pooling calculation their values are -inf."),
    Sentence("OV-MAX", "ov-maxpool-8", _MAXPOOL8,
             "The max pooling operation involves sliding a filter over each channel of a feature map and "
             "downsampling by choosing the largest value within the region covered by the filter."),
    Sentence("OV-DILATIONS", "ov-maxpool-8", _MAXPOOL8,
             "dilations specify the index of the next pixel to select when pooling. If not present, the dilation "
             "defaults to 1, meaning the adjacent pixel is chosen. A value of 2 indicates that one pixel is skipped "
             "and every other pixel is considered."),
    Sentence("OV-PADS-BEGIN", "ov-maxpool-8", _MAXPOOL8,
             "pads_begin is a number of pixels to add to the beginning along each axis. For example, pads_begin "
             "equal to \u201c1,2\u201d means adding 1 pixel to the top of the input and 2 to the left of the input."),
    Sentence("OV-PADS-END", "ov-maxpool-8", _MAXPOOL8,
             "pads_end is a number of pixels to add to the ending along each axis. For example, pads_end equal to "
             "\u201c1,2\u201d means adding 1 pixel to the bottom of the input and 2 to the right of the input."),
    Sentence("OV-PAD-NEG-INF", "ov-maxpool-8", _MAXPOOL8, "All added padding values are equal to negative infinity."),
    Sentence("OV-SAME-SPLIT", "ov-maxpool-8", _MAXPOOL8,
             "same_upper (same_lower) the input is padded to match the output size. In case of odd padding value, "
             "an extra padding is added at the end (at the beginning)."),
    Sentence("OV-AUTO-PAD-PADS", "ov-maxpool-8", _MAXPOOL8,
             "Note: pads_begin and pads_end attributes are ignored when auto_pad is not equal to explicit."),
    Sentence("OV-AXIS", "ov-maxpool-8", _MAXPOOL8,
             "The upper bound is the product of dimensions starting from the one pointed by the \u2018axis\u2019 "
             "attribute until the end of the input shape."),
    Sentence("OV-INDEX", "ov-maxpool-8", _MAXPOOL8,
             "Values are computed as indices in a tensor flattened to 1D, not considering padding."),
    Sentence("OV-INDEX-PADS", "ov-maxpool-8", _MAXPOOL8,
             "The values of this output can only be calculated correctly if pads_value is set to -infinity."),
    Sentence("OV-OUT-TYPE", "ov-maxpool-8", _MAXPOOL8, "Output tensor has the same data type as the input tensor."),
    # ---------------------------------------------------------------- OpenVINO opset14 Python API
    Sentence("OV14-AVG-EXCLUDE-PAD", "ov-opset14-api", ("openvino:opset14.avg_pool",),
             "Whether or not to include zero padding in average computations.",
             "avg_pool's exclude_pad parameter"),
    Sentence("OV14-PADS-BEGIN", "ov-opset14-api", ("openvino:opset14.avg_pool", "openvino:opset14.max_pool"),
             "The number of pixels to add at the beginning along each axis.", "the pads_begin parameter"),
    Sentence("OV14-PADS-END", "ov-opset14-api", ("openvino:opset14.avg_pool", "openvino:opset14.max_pool"),
             "The number of pixels to add at the end along each axis.", "the pads_end parameter"),
    # ---------------------------------------------------------------- ONNX: shapes
    Sentence("ONNX-SHAPE-FLOOR", "onnx-averagepool-19", _ONNX_DOC,
             "output_spatial_shape[i] = floor((input_spatial_shape[i] + pad_shape[i] - dilation[i] * "
             "(kernel_shape[i] - 1) - 1) / strides_spatial_shape[i] + 1)", "explicit padding, ceil_mode disabled"),
    Sentence("ONNX-SHAPE-CEIL", "onnx-averagepool-19", _ONNX_DOC,
             "output_spatial_shape[i] = ceil((input_spatial_shape[i] + pad_shape[i] - dilation[i] * "
             "(kernel_shape[i] - 1) - 1) / strides_spatial_shape[i] + 1)", "explicit padding, ceil_mode enabled"),
    Sentence("ONNX-LAST-WINDOW-EXAMPLE", "onnx-averagepool-19", ("seeds/004_509d0c367cfe146b.txt",),
             "y: shape=(1, 1, 1, 1), dtype=float32",
             "the output of the page's example test_cc_averagepool_2d_ceil_last_window_starts_on_pad (input 2x2, "
             "kernel 3, stride 3, pads 1, ceil_mode 1): ONNX-SHAPE-CEIL gives 2x2; the example drops the window "
             "that starts in the end padding"),
    Sentence("ONNX-SHAPE-VALID-CEIL", "onnx-averagepool-19", _ONNX_DOC,
             "VALID: output_spatial_shape[i] = ceil((input_spatial_shape[i] - ((kernel_spatial_shape[i] - 1) * "
             "dilations[i] + 1) + 1) / strides_spatial_shape[i])",
             "auto_pad VALID with ceil_mode enabled: the same number as with ceil_mode disabled"),
    Sentence("ONNX-SHAPE-VALID", "onnx-averagepool-19", _ONNX_DOC,
             "VALID: output_spatial_shape[i] = floor((input_spatial_shape[i] - ((kernel_spatial_shape[i] - 1) * "
             "dilations[i] + 1)) / strides_spatial_shape[i]) + 1", "auto_pad VALID with ceil_mode disabled"),
    Sentence("ONNX-SHAPE-SAME", "onnx-averagepool-19", _ONNX_DOC,
             "SAME_UPPER or SAME_LOWER: output_spatial_shape[i] = floor((input_spatial_shape[i] - 1) / "
             "strides_spatial_shape[i]) + 1", "auto_pad SAME with ceil_mode disabled"),
    Sentence("ONNX-SHAPE-SAME-CEIL", "onnx-averagepool-19", _ONNX_DOC,
             "SAME_UPPER or SAME_LOWER: output_spatial_shape[i] = ceil(input_spatial_shape[i] / "
             "strides_spatial_shape[i])", "auto_pad SAME with ceil_mode enabled: the same number"),
    Sentence("ONNX-SAME-PADS", "onnx-averagepool-19", _ONNX_DOC,
             "pad_shape[i] = (output_spatial_shape[i] - 1) * strides_spatial_shape[i] + "
             "((kernel_spatial_shape[i] - 1) * dilations[i] + 1) - input_spatial_shape[i]",
             "the SAME pad total (negative when the stride exceeds the dilated kernel)"),
    Sentence("ONNX-DIVISOR", "onnx-averagepool-19", _AVG19,
             "The output of each pooling window is divided by the number of elements (exclude pad when attribute "
             "count_include_pad is zero)."),
    # ---------------------------------------------------------------- ONNX: attributes and outputs
    Sentence("ONNX-PADS", "onnx-schema", _onnx_attr("pads"),
             "Padding for the beginning and ending along each spatial axis, it can take any value greater than or "
             "equal to 0."),
    Sentence("ONNX-PADS-FORMAT", "onnx-schema", _onnx_attr("pads"),
             "`pads` format should be as follow [x1_begin, x2_begin...x1_end, x2_end,...], where xi_begin the "
             "number of pixels added at the beginning of axis `i` and xi_end, the number of pixels added at the end "
             "of axis `i`."),
    Sentence("ONNX-AUTO-PAD-SAME", "onnx-schema", _onnx_attr("auto_pad"),
             "SAME_UPPER or SAME_LOWER mean pad the input so that `output_shape[i] = ceil(input_shape[i] / "
             "strides[i])` for each axis `i`."),
    Sentence("ONNX-SAME-SPLIT", "onnx-schema", _onnx_attr("auto_pad"),
             "In case the padding is an odd number, the extra padding is added at the end for SAME_UPPER and at the "
             "beginning for SAME_LOWER."),
    Sentence("ONNX-DILATIONS", "onnx-schema", _onnx_attr("dilations"),
             "Dilation value along each spatial axis of filter."),
    Sentence("ONNX-STORAGE-ORDER", "onnx-schema", _onnx_attr("storage_order", ("MaxPool-22",)),
             "The storage order of the tensor. 0 is row major, and 1 is column major. This attribute is used only to "
             "convert an n-tuple index value into a single integer value for producing the second output."),
    Sentence("ONNX-INDICES", "onnx-schema", _onnx_attr("Indices", ("MaxPool-22",)),
             "The indices are computed as flatten 1-D tensor, and the indices do not consider padding. So the "
             "values in indices are in [0, N x C x D1 x ... x Dn)."),
    Sentence("ONNX-MAX", "onnx-schema", ("onnx:MaxPool-22",),
             "The output of each pooling window is maximum number of elements exclude pad."),
    Sentence("ONNX-AVG-TYPES", "onnx-schema", _onnx_attr("T", ("AveragePool-19", "AveragePool-22")),
             "Constrain input and output types to float tensors."),
    # ------------------------------------------------------------------ the rest of the family
    Sentence("ONNX-LP-NORM", "onnx-family-schema", ("onnx:LpPool-22",),
             "Lp pooling consisting of computing the Lp norm on all values of a subset of the input tensor "
             "according to the kernel size and downsampling the data into the output tensor Y for further processing."),
    Sentence("ONNX-LP-P", "onnx-family-schema", ("onnx:LpPool-22:p", "onnx:GlobalLpPool-22:p"),
             "p value of the Lp norm used to pool over the input data."),
    Sentence("ONNX-LP-PADS", "onnx-family-schema", ("onnx:LpPool-22:pads",),
             "The value represent the number of pixels added to the beginning and end part of the corresponding axis."),
    Sentence("ONNX-GLOBAL-LP", "onnx-family-schema", ("onnx:GlobalLpPool-22",),
             "applies lp pool pooling across the values in the same channel."),
    Sentence("ONNX-UNPOOL-OUTPUT-SIZE", "onnx-family-schema", ("onnx:MaxUnpool-22",),
             "The third (optional) input is a tensor that specifies the output size of the unpooling operation."),
    Sentence("ONNX-AUTO-PAD-SAME-MATCH", "onnx-old-schema",
             tuple(f"onnx:{op}:auto_pad" for op in ("LpPool-2", "MaxPool-8", "MaxPool-10", "AveragePool-7",
                                                    "AveragePool-10")),
             "SAME_UPPER or SAME_LOWER mean pad the input so that the output spatial size match the input.",
             note="the older versions' auto_pad; -11 says ceil(input_shape[i] / strides[i])"),
    Sentence("OV-ADAPTIVE-START", "ov-adaptive-8", ("catalogue:AdaptiveAvgPool-8",), "h_start = floor(j * H_in / H_out)",
             note="a formula"),
    Sentence("OV-ADAPTIVE-END", "ov-adaptive-8", ("catalogue:AdaptiveAvgPool-8",), "h_end = ceil((j+1) * H_in / H_out)",
             note="a formula"),
    Sentence("OV-ADAPTIVE-INDICES", "ov-adaptive-8", ("catalogue:AdaptiveMaxPool-8",),
             "The values of indices are computed as if input spatial dimensions were flatten"),
)}


def sentence(sid: str) -> Sentence:
    """The sentence with id ``sid`` (KeyError names the unknown id)."""
    try:
        return SENTENCES[sid]
    except KeyError:
        raise KeyError(f"no spec sentence with id {sid!r}") from None


def quote(sid: str) -> str:
    """``"<words>" (<document title>)``: a sentence as it is shown to people."""
    s = sentence(sid)
    return f"\u201c{s.text}\u201d ({DOCUMENTS[s.document].title})"


def cited(text: str) -> list[str]:
    """The sentence ids cited in ``text`` (``[OV-PAD-NEG-INF]`` style or bare), in order, once each."""
    found: list[str] = []
    for m in _ID.finditer(text):
        if m.group(0) in SENTENCES and m.group(0) not in found:
            found.append(m.group(0))
    return found


_ID = re.compile(r"(?<![\w-])(?:OV|OV14|ONNX)(?:-[A-Z0-9]+)+(?![\w-])")
