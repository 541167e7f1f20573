// The errors of the strategies layer beyond libcollective's
// (collective/errors.h): those a ParameterServerStrategy's caller catches.
#pragma once

#include "collective/errors.h"

namespace collective::distribute {

// A task of the cluster (a ps or every worker) is gone: it stopped
// answering within the failure timeout (tf.errors.UnavailableError). The
// message names the task and its rank.
class UnavailableError : public CommunicationError {
 public:
  using CommunicationError::CommunicationError;
};

// A scheduled function raised on its worker. operation() names the
// closure ("closure 'train_step' #3"), rank() the worker's rank, cause()
// the worker and the exception's message.
class ClosureError : public Error {
 public:
  using Error::Error;
};

}  // namespace collective::distribute
