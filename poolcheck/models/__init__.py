"""Pooling in whole models: read ONNX / OpenVINO IR models and ONNX backend test directories,
audit their pooling nodes (risk classes, runs on the engines and peers), export cases as ONNX
backend test directories."""
