// Node ids of the three nodes the cluster tests' topologies are made of.
#pragma once

#include <string>

inline const std::string kA = "Eo9a7ihKMsKPh8nspyTog7P010lxQpMfSUwmMbsQ";
inline const std::string kB = "yWn4949hMP0ywvvcAilG77z1KgR2BPFIR4IzbKRM";
inline const std::string kC = "RFD8qHce1nZADChRm1I9w6oKt494ZMZKsO23AHOq";
